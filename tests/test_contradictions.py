"""The rule cascade of the contradiction detector (no embeddings, no judge)."""
from __future__ import annotations

import pytest

from memwatch_overlay.overlay.detect.detector import Contradiction, Detector, FactView

from contradiction_cases import PARAPHRASES

DAY = 86400.0


@pytest.fixture(scope="module")
def detector():
    return Detector()


def fact(ref, text, key=None, days_ago=0.0, subject="u1", category="general"):
    return FactView(ref=ref, subject=subject, key=key, text=text, category=category,
                    learned_at=1_800_000_000.0 - days_ago * DAY)


# Pairs the shipped detector gets wrong (labelled as a careful reader would; strict: the day a
# refit gets one right this fails, and the pair leaves this set).
KNOWN_MISSES: set[tuple[str, str]] = set()


def _paraphrase_params():
    for i, (old, key, new, expected) in enumerate(PARAPHRASES):
        marks = (pytest.mark.xfail(strict=True, reason="a known miss of the shipped detector"),
                 ) if (old, new) in KNOWN_MISSES else ()
        yield pytest.param(old, key, new, expected, marks=marks, id=f"{i}:{old[:20]}->{new[:25]}")


@pytest.mark.parametrize("old,key,new,expected", list(_paraphrase_params()))
def test_paraphrases(detector, old, key, new, expected):
    found = detector.compare(fact("new", new), [fact("old", old, key=key, days_ago=300)])
    assert bool(found) is expected, found


def test_result_shape_and_update(detector):
    old = fact("s:t:1", "Lives in Madrid", key="city", days_ago=400)
    [c] = detector.compare(fact("s:t:2", "We moved to Valencia in March."), [old])
    assert isinstance(c, Contradiction)
    assert (c.older, c.newer, c.kind) == ("s:t:1", "s:t:2", "value")
    assert 0.5 <= c.confidence <= 1.0 and "valencia" in c.evidence.lower()
    assert c.update == {"action": "UPDATE", "key": "city", "old_value": "Madrid", "new_value": "Valencia"}


def test_ending_without_new_value_suggests_expire(detector):
    old = fact("a", "Email is li@uni.edu", key="email", days_ago=300)
    [c] = detector.compare(fact("b", "I graduated and li@uni.edu was deactivated."), [old])
    assert c.kind == "cue" and c.update["action"] == "EXPIRE" and c.update["new_value"] is None


def test_update_key_is_the_slot_when_the_memory_key_names_another_slot(detector):
    old = fact("a", "Girlfriend is Maya", key="partner", days_ago=300)
    [c] = detector.compare(fact("b", "Maya said yes - we are engaged!"), [old])
    assert c.update["key"] == "relationship_status" and c.update["new_value"] == "engaged"


def test_same_key_different_value_is_a_value_contradiction(detector):
    old = fact("a", "Google", key="employer", days_ago=100)
    [c] = detector.compare(fact("b", "Stripe", key="employer"), [old])
    assert c.kind == "value" and c.update["new_value"] == "Stripe"
    assert detector.confirms(fact("c", "google", key="employer"), old)


def test_generic_and_uuid_keys_are_not_compared(detector):
    for key in ("memory", "3f1c2a9e-0000-4000-8000-000000000000"):
        old = fact("a", "Likes chess", key=key, days_ago=10)
        assert detector.compare(fact("b", "Has a cat", key=key), [old]) == []


def test_confirmation_is_not_a_contradiction(detector):
    old = fact("a", "Phone number is 555-0188", key="phone", days_ago=80)
    new = fact("b", "Call me at 555-0188 after 6.")
    assert detector.compare(new, [old]) == []
    assert detector.confirms(new, old)
    assert not detector.confirms(fact("c", "Lives in Oslo"), old)


def test_only_older_facts_are_contradicted(detector):
    newer_in_time = fact("a", "Lives in Rome", days_ago=1)
    assert detector.compare(fact("b", "I moved to Milan.", days_ago=5), [newer_in_time]) == []


def test_comparisons_count_pairs(detector):
    d = Detector(detector.pack)
    olders = [fact(f"o{i}", f"Likes topic number {i}", days_ago=10 + i) for i in range(25)]
    d.compare(fact("n", "Lives in Oslo"), olders)
    assert d.comparisons == 25
    d.compare(fact("n2", "Lives in Bergen"), olders[:3])
    assert d.comparisons == 28


def test_one_result_per_older_fact(detector):
    old = fact("a", "Works at Google as a product analyst", days_ago=500)
    found = detector.compare(fact("b", "I just joined Stripe as a staff engineer."), [old])
    assert [c.older for c in found] == ["a"]


def test_duration_makes_a_refinement_compatible(detector):
    old = fact("a", "Lives in Germany", key="country", days_ago=700)
    assert detector.compare(fact("b", "I have been living in Munich for six years."), [old]) == []
    # the same sentence without the duration is a move
    assert detector.compare(fact("c", "I have been living in Munich."), [old])


def test_a_sentence_taken_back_asserts_nothing(detector):
    rules = Detector(learned=False)
    old = fact("a", "Lives in Edinburgh", key="city", days_ago=400)
    for said, taken_back in (("I'm moving to the Sahara, I've had it with this wind.", " (not really. but the WIND.)"),
                             ("Moved to Ibiza for good.", " Kidding, the rain here is fine"),
                             ("Just moved to Lisbon to become a DJ", ", jk")):
        assert rules.compare(fact("b", said), [old]), said               # a move, said alone
        assert detector.compare(fact("b", said + taken_back), [old]) == [], taken_back
    job = fact("j", "Works at Google", key="employer", days_ago=400)
    fired = "I got fired today, my manager said so when I spilled coffee on her laptop."
    assert rules.compare(fact("b", fired), [job])
    for taken_back in (" she was joking, relax", " (just kidding)", " I am only joking"):
        assert detector.compare(fact("b", fired + taken_back), [job]) == [], taken_back
    # only the sentence taken back: a third person's joke about something else, or "not
    # really ..." opening a sentence, takes nothing back
    assert rules.compare(fact("d", "Moved to Glasgow last month. My brother was joking about it"), [old])
    assert rules.compare(fact("e", "Moved to Glasgow. Not really settled yet though"), [old])


@pytest.mark.parametrize("old,key,new,value", [
    ("Works at Atlassian", "employer", "first week at Stripe done, my brain is full", "Stripe"),
    ("Works at Atlassian", "employer", "week one at Canva!! the office has a kombucha tap", "Canva"),
    ("Works at Atlassian", "employer", "got my first payslip from Grab today", "Grab"),
    ("Works at ETH Zurich", "employer", "Defended in May and started a postdoc at EPFL in August", "EPFL"),
    ("Works at Wayfair", "employer", "couch tester now (translation: Wayfair let me go on Friday)", None),
    ("Husband is Harold", "spouse", "It's been a hard few months since Harold passed.", None),
    ("I live in São Paulo", "city", "Saí de São Paulo em julho, agora moro em Florianópolis", "Florianópolis"),
    ("Lives in Lisbon", "city", "nos mudamos para Porto no verão", "Porto"),
])
def test_new_employers_moves_and_endings_said_in_passing(old, key, new, value):
    """Phrasings that name a new value or end one in passing (a first week, a first payslip,
    a role started somewhere, an employer that let one go, a death, Portuguese), read by the
    rules alone."""
    [c] = Detector(learned=False).compare(fact("b", new), [fact("a", old, key=key, days_ago=400)])
    assert c.update["new_value"] == value, c


def test_an_account_deleted_ends_its_use():
    """The account slot: an app or network the user is on, ended by deleting, deactivating or
    leaving it; a post deleted, someone else's account or a question ends nothing."""
    rules = Detector(learned=False)
    tiktok = fact("a", "The user uses TikTok daily", days_ago=300)
    linkedin = fact("l", "Active on LinkedIn, happy for recruiters to reach out there", key="linkedin", days_ago=300)
    for new, old, app in (("deleted tiktok 3 weeks ago and my screen time halved", tiktok, "tiktok"),
                          ("deactivated LinkedIn, the recruiter spam was unbearable. email only", linkedin, "linkedin"),
                          ("I finally uninstalled TikTok", tiktok, "tiktok")):
        [c] = rules.compare(fact("b", new), [old])
        assert c.older == old.ref and app in c.evidence.lower(), c
    for new in ("deleted the TikTok video of my cat", "my sister deleted her TikTok", "should I delete TikTok?",
                "I use TikTok and Instagram every day"):
        assert rules.compare(fact("b", new), [tiktok]) == [], new


def test_a_length_in_cm_is_a_height_only_as_one():
    rules = Detector(learned=False)
    tall = fact("a", "The user is 165 cm", key="height", days_ago=300)
    assert rules.compare(fact("b", "I am 172 cm now, the doctor measured twice"), [tall])
    for new in ("I grew 10 cm overnight! (I bought platform boots)", "bought a 30 cm frying pan",
                "the fish was 45cm long"):
        assert rules.compare(fact("b", new), [tall]) == [], new


def test_the_rules_read_no_employer_in_a_first_day_at_school_or_a_plan():
    rules = Detector(learned=False)
    old = fact("a", "Works at Atlassian", key="employer", days_ago=400)
    for text in ("first day at school for the twins", "my first week at Stripe starts next Monday",
                 "my sister started a new job at Canva"):
        assert rules.compare(fact("b", text), [old]) == [], text
    husband = fact("a", "Husband is Harold", key="spouse", days_ago=400)
    assert rules.compare(fact("b", "since Harold passed, the garden keeps me going"), [husband])
    for text in ("Harold passed the driving test", "Harold passed the driving test, finally"):
        assert rules.compare(fact("b", text), [husband]) == [], text


def test_extract_reads_slots(detector):
    slots = {(s.name, s.value) for s in detector.extract("Priya just joined Stripe as a staff engineer.")}
    assert {("employer", "stripe"), ("job_title", "staff engineer")} <= slots
    assert detector.extract("My sister works at Stripe.") == []
    assert detector.extract("I might move to Paris.") == []
    only_location = detector.extract("Works at Stripe and lives in Lisbon", category="location")
    assert [(s.name, s.value) for s in only_location] == [("city", "lisbon")]


def test_category_of(detector):
    assert detector.category_of("Moved to Surabaya last month") == "location"
    assert detector.category_of("Her phone is +62 812 5550 1234") == "contact"
    assert detector.category_of("asdf qwer") is None


def test_min_confidence_filters(detector):
    d = Detector(detector.pack, min_confidence=0.99)
    old = fact("a", "Lives in Rome", days_ago=10)
    assert d.compare(fact("b", "Moved to Milan."), [old]) == []


@pytest.fixture(scope="module")
def rules():
    return Detector(learned=False)


# Slots added at stop 35, each with phrasings written for the project (none uses a case's words).
@pytest.mark.parametrize("old,new", [
    # levels, settings, credentials, courses given up or passed, tastes acquired
    ("Grade 4 violin", "got my grade 7 violin results, distinction!"),
    ("Karate: green belt", "tested for my brown belt yesterday and passed"),
    ("Italian: B1", "passed the CILS C1 exam last month, so proud"),
    ("Has a bachelor's degree in history", "finally finished my master's degree in archaeology"),
    ("Highest qualification: high school diploma", "earned my bachelor's degree at 41, night school works"),
    ("Prefers window seats on flights", "put me in an aisle seat from now on, I get up a lot"),
    ("Wants distances in miles", "I think in kilometres these days, use metric please"),
    ("Likes short answers with bullet points", "I want detailed explanations from now on, I'm studying for an exam"),
    ("Wants replies in English", "respóndeme en español a partir de hoy, por favor"),
    ("Early bird, prefers meetings before 9", "honestly I've become a night owl, afternoons are best for calls"),
    ("Only drives automatic cars", "I can drive a manual now, my brother taught me on his Fiat"),
    ("Holds 3 AWS certifications", "passed my fourth AWS cert today"),
    ("Speaks two languages, English and Tamil", "my Spanish is finally good enough, so that's three languages now"),
    ("Doing an MBA at night", "I dropped out of my MBA, the travel for work made it impossible"),
    ("Studying for the CFA Level 2 exam", "CFA Level 2: passed! on to level 3"),
    ("Hates olives", "I've started liking olives?! my mother-in-law's tapenade did it"),
    ("Does not have a driving licence", "passed my driving test this morning!"),
    # counts, routines, commute, phone, partners and pets that are gone, births, retirement
    ("Has lived in 2 countries", "Oslo makes three countries I've lived in"),
    ("Has 12 houseplants", "the plant count is now at 20, send help"),
    ("Manages a team of 6 engineers", "we grew, I have 9 engineers now"),
    ("Has two grandchildren", "say hello to grandbaby number three, born Tuesday"),
    ("Owns three cars", "we're down to one car since the move"),
    ("Has run 2 marathons", "finished my 3rd marathon in Berlin"),
    ("Drives to work every day", "I cycle to work now, 20 minutes along the canal"),
    ("Takes the bus to work", "walking to work these days, the new flat is close"),
    ("Uses a Pixel 6", "switched to an iPhone 15 after my Pixel died"),
    ("Swims on Tuesday evenings", "swimming is on Thursday evenings now, the pool changed its schedule"),
    ("Girlfriend is Mia", "Mia and I broke up last month"),
    ("Partner is Jonas", "Jonas moved out in the spring"),
    ("Has a dog named Biscuit", "we had to put Biscuit down last week"),
    ("Allergic to peanuts", "turns out I've outgrown the peanut allergy"),
    ("Has two sons", "our second baby arrived on Friday, a girl this time!"),
    ("Has a daughter", "2nd baby boy arrived at dawn, mum and son are fine"),
    ("Works part-time as a librarian", "I retired in June, the library threw me a party"),
    ("Graduate student at McGill", "started a postdoc at Caltech in September"),
    # handles and sites replaced, tastes, states that end, citizenship, team, code, coffee, goals
    ("Girlfriend: Ana", "Ana and I called it quits over the summer"),
    ("Instagram: @lenabakes", "changed my handle to @lena.bakes.bread, the old one got hacked"),
    ("Blog: tomwrites.wordpress.com", "my blog's moved to tomwrites.dev, finally my own domain"),
    ("Listens mostly to K-pop", "honestly I'm sick of K-pop, it's all lo-fi now"),
    ("Odeia coentro", "hoje adoro coentro, quem diria"),
    ("Is on dating apps, looking for a partner", "Leo and I are officially exclusive!"),
    ("Has been an atheist all his life", "got baptised last Sunday, my mum cried"),
    ("Broke her wrist, arm in a cast", "cast came off today, the arm looks tiny"),
    ("Waiting on the results of an MRI", "the MRI came back clear, huge relief"),
    ("Permanent resident, not a Canadian citizen yet", "took the oath this morning, I'm officially a Canadian citizen"),
    ("Pregnant with her second child", "our daughter was born on Monday, 3.2 kg of perfection"),
    ("On the payments team at Shopify", "I transferred to the search team last month"),
    ("Codes mostly in Python", "switched to Go at the new job, loving the compiler"),
    ("Codes mostly in Python", "I mostly write Go these days"),
    ("Usual coffee: a cappuccino", "I've switched to oat lattes, dairy hates me"),
    ("Step goal: 8000 a day", "raised my step goal to 12000 since the new dog"),
])
def test_levels_settings_counts_and_endings_said_any_way(rules, old, new):
    """A graded level (exam grade, belt, CEFR level, highest degree), a setting the assistant
    follows (seat, units, answer length, reply language, early or late, gearbox), a count of
    things collected or managed, a routine's day, a course given up or passed, a handle or site
    replaced and a state that ends, read by the rules alone."""
    [c] = rules.compare(fact("b", new), [fact("a", old, days_ago=400)])
    assert c.older == "a", c


@pytest.mark.parametrize("old,new", [
    # levels and settings
    ("Grade 4 violin", "passed grade 6 piano this spring"),             # another instrument
    ("Judo brown belt", "got my Six Sigma green belt at work"),          # not a martial-arts belt
    ("Judo brown belt", "my daughter got her yellow belt today"),        # someone else's
    ("Italian: B1", "my Spanish is at B2 now"),                          # another language
    ("Prefers window seats on flights", "book me an aisle seat this time, my knee is bad"),
    ("Prefers window seats on flights", "should I pick an aisle seat for the long haul?"),
    ("Wants replies in English", "can you reply in English? the last one came out in Dutch"),
    ("Grade 4 violin", "got my grade 4 violin certificate framed"),       # the same level
    ("Hates olives", "are you into olives??"),
    ("Works day shifts at the depot", "covering a night shift for a friend this week"),  # one shift
    ("Prefers aisle seats", "booked a window seat for my mum, she likes the view"),     # for someone else
    ("Codes mostly in Python", "the new intern writes mostly Java"),                     # someone else's code
    ("Judo brown belt", "watched the black belt grading at my club tonight"),           # not the user's belt
    ("Grade 5 piano", "teaching grade 2 piano students now"),                            # pupils' grade
    ("Has lived in 2 countries", "I have 3 countries left on my bucket list"),            # still to do
    ("Usual coffee: a cappuccino", "having a latte with Sam, she's back from Peru"),     # one cup
    ("On the payments team at Shopify", "I'm on the planning team for the wedding"),     # not work
    ("Pregnant, due in August", "our cat's kittens were born last night, five of them!"),
    ("Wants replies in English", "reply in French to my landlord please, draft below"),  # for someone else
    ("Works day shifts", "I'm on nights this week, send coffee"),                        # one week
    ("Drives to work", "I cycle to work on Fridays when it's dry"),                      # some days
    ("Drives to work", "I sometimes cycle to work"),
    ("Uses a Pixel 6", "using an iPhone for now, my Pixel is in repair"),                # a stand-in
    # counts, routines, devices, endings
    ("Has two grandchildren", "grandbaby number three is due in May!"),       # not yet
    ("Has lived in 2 countries", "I have visited 30 countries so far"),      # visited, not lived
    ("Drives to work every day", "my sister cycles to work"),                 # someone else
    ("Swims on Tuesday evenings", "I do yoga on Thursday evenings"),          # another activity
    ("Partner is Jonas", "Lukas moved out, so the spare room is free at last"),  # not him
    ("Uses a Pixel 6", "my Pixel 6 battery is dying"),                        # the same phone
    ("Has two sons", "our son arrived home from college for the summer"),    # no birth
    ("Lives in Bristol", "has a daughter who lives in Leeds"),                # a relative clause
    ("Runs every morning", "I used to hate running, now I get grumpy if I skip it"),  # an aversion ended
    # handles, tastes, states
    ("Instagram: @lenabakes", "follow my friend @tomcooks, he's great"),   # no replacement
    ("Usual coffee: a cappuccino", "had a latte today for a change"),
    ("On the payments team at Shopify", "I played on the football team in college"),
    ("Pregnant with her second child", "my sister's baby was born on Monday"),
    ("Codes mostly in Python", "switched to Go for one side project"),
])
def test_levels_settings_counts_and_endings_leave_other_things_alone(rules, old, new):
    """Someone else's level or choice, a one-off, a plan, another instrument, language or
    activity, the same value again: nothing outdated."""
    assert rules.compare(fact("b", new), [fact("a", old, days_ago=400)]) == [], new


def test_a_keyed_number_is_read_from_a_short_value():
    """``key = age``, ``text = "Is 29"``: the key names the slot and the one number in the
    text is its value."""
    rules = Detector(learned=False)
    [c] = rules.compare(fact("b", "turned 32 last week, still feel 25"), [fact("a", "Is 29", key="age", days_ago=30)])
    assert c.update["new_value"] == "32", c
    assert rules.compare(fact("b", "I am 29, a year older than my brother"),
                         [fact("a", "Is 29", key="age", days_ago=30)]) == []
    assert rules.compare(fact("b", "turned 32 last week"), [fact("a", "Is 29 or 30", key="age", days_ago=30)]) == []


def test_facts_about_different_slots_are_not_weighed_by_the_pair_model(detector):
    """Each text asserts a slot of its own (a move, an e-mail) and the newer ends nothing: the
    rules read two different things, and the pair model is not asked (it once guessed 0.49
    on this pair from the CrewAI fixture store)."""
    old = fact("a", "Remember for future tasks: Priya's personal email is priya.raman@example.com.", days_ago=400)
    new = fact("b", "Remember for future tasks: Priya moved to Surabaya last month.")
    assert detector.compare(new, [old]) == []
    nr, orr = detector.read(new), detector.read(old)
    assert detector._pair(new, nr, old, orr).elsewhere
    # a newer text that ends something is still weighed
    ended = fact("c", "we got engaged in May, and the Outback finally died on the highway, RIP old friend")
    er = detector.read(ended)
    assert {s.name for s in er.slots} & {"relationship_status"}         # it asserts a slot of its own
    assert not detector._pair(ended, er, old, orr).elsewhere


@pytest.mark.parametrize("old,new", [
    ("Commutes on the TransJakarta bus", "udah gak naik TransJakarta lagi sejak pindah kantor"),
    ("Smokes Gauloises", "je ne fume plus de Gauloises depuis janvier"),
    ("Drinks Coca-Cola every day", "não bebo mais Coca-Cola, só água"),
    ("Plays padel at a club in Rome", "non gioco più a padel, troppo caro"),
    ("Eats at McDonald's often", "ik eet niet meer bij McDonald's"),
    ("Runs with the Parkrun group", "dejé de ir al Parkrun en verano"),
])
def test_no_longer_said_in_other_languages(old, new):
    """French, Portuguese, Italian, Indonesian, Dutch and Spanish ways of saying "no longer"
    or "stopped", linked to the older fact by a name both share."""
    [c] = Detector(learned=False).compare(fact("b", new), [fact("a", old, days_ago=400)])
    assert c.kind == "cue", c



# Phrasing classes added at stop 36 after a held-out set written by a separate author (set A)
# was measured; the pairs are written for the project and use none of that set's words.
@pytest.mark.parametrize("old,key,new", [
    # names in texts written all in lower case
    ("Lives in Glasgow", None, "the new flat in dundee gets so much more light"),
    ("Works at Deloitte", None, "first week at kpmg done, new badge and everything"),
    ("Girlfriend is Ines", None, "noor and i went to the coast for our 6 month anniversary"),
    # a thing named as the user's old one, in five languages
    ("Drives a Golf", None, "selling my old golf was harder than I thought"),
    ("Uses a Samsung Galaxy", None, "meine alte galaxy liegt jetzt in der schublade"),
    # a taste or belief turned, a thing not touched since
    ("Favourite band: Coldplay", None, "coldplay totally lost me after that last album"),
    # a party that lost the user, a thing dead to the user, off a thing for good, a thing swapped for another
    ("Votes Conservative", "politics", "went Lib Dem this time, honestly the conservatives lost me years ago"),
    ("Favourite snack is Pringles", None, "pringles are officially dead to me, way too salty now"),
    ("Uses Telegram for everything", None, "i'm off telegram for good, everything goes through email now"),
    ("Drinks two coffees a day", None, "swapped my coffees for green tea and my sleep is so much better"),
    ("Subscribed to Netflix", None, "cancelled the netflix sub for good, nothing worth watching"),
    ("Practises on Duolingo daily, 200-day streak", None, "ugh my duolingo streak died yesterday, 240 days gone"),
    # the user asks the assistant to change what it keeps (a request, though said as a question)
    ("Emergency contact: sister Ana", None, "can you change my emergency contact to my partner Sam? his number is 555-0101"),
    ("Shipping address: 12 Elm St", None, "please update my shipping address to 4 Oak Road"),
    ("Preferred name: Jim", None, "could you switch my preferred name to James from now on?"),
    # a number that died (not a phone that did)
    ("Mobile: 0412 889 301", None, "my old number is dead, text me on the new one please"),
    ("Thinks crypto is the future", None, "I was so wrong about crypto, sold everything at a loss"),
    ("Plays the guitar every evening", None, "haven't touched my guitar in months, the strings are rusty"),
    ("Hates aubergine", None, "eggplant has grown on me, my flatmate's parmigiana did it"),
    # ended for good: a card torn up, a pet buried, a switch said as a noun, a break-up abroad
    ("Has a library card", None, "tore up my library card, the fines were absurd"),
    ("Has a hamster named Pip", None, "we buried pip in the garden this morning"),
    ("Teaches at Riverside Primary", None, "the move from riverside to the academy was the best decision"),
    ("Boyfriend: Mateo", None, "mateo y yo rompimos en verano"),
    # habits and states ended without the usual word
    ("Smokes", None, "three weeks without a cigarette now"),
    ("Drinks wine most nights", None, "two months alcohol free, sleeping like a baby"),
    ("Expecting twins in spring", None, "the twins are 5 days old and already run the house"),
    ("Married to Jo", None, "the divorce was finalised on Tuesday"),
    ("Lives with her parents in Braga", None, "got the keys to my own place today"),
    ("Can not swim", None, "swam across the lake pool without help this morning"),
    ("Works at Northvolt", None, "six weeks on the job market since northvolt shut down our whole battery unit"),
    # keyed memories and other languages
    ("85kg", "weight", "the scale said 79 this morning"),
    ("Speaks two languages", None, "with german I'm at three languages"),
    ("Prefers aisle seats", None, "window every time now, I love the view"),
    ("Works at SAP", None, "mein erster tag bei siemens war lang"),
    ("Lives in Lille", None, "enfin installés à bordeaux avec les enfants"),
    ("Lives in Cork", None, "settling into Galway nicely, the flat is tiny"),    # set B's kind of memory: a person's fact in the third person against a chat turn
    ("Nadia smokes a pack a week", None, "two weeks without a single cigarette, the cravings are easing"),
    ("Pregnant with her first, due in May", None, "little Omar is ten days old and already hates socks"),
    ("Has one son", None, "Baby Ines arrived at dawn, 3.1 kg and furious about it"),
    ("Lives in Valencia", None, "por fin estoy instalado en Sevilla, el piso es precioso"),
    ("Lives with his parents in Leeds", None, "signed my first lease today, a studio near the station"),
    ("Can not ski", None, "skied a whole red run on Saturday without falling once"),
    ("Dating Theo", None, "Theo and I decided we're better off as friends"),
    ("Has always voted Labour", None, "voted Lib Dem this time, first time ever"),
    ("Is an atheist", None, "I've started believing in God again, it surprised me too"),
    ("Dislikes jazz", None, "turned into a total jazz person this winter, Coltrane on repeat"),
    ("Checks his horoscope every morning", None, "I'm done with horoscopes, deleted the app"),
    ("Drinks green tea every morning", None, "the green tea is gathering dust, I'm a coffee person now"),
    ("Favourite band is Blur", None, "Pulp have knocked Blur off the top spot for me"),
    ("Favourite cuisine: Thai", None, "Ethiopian has overtaken Thai for me this year"),
    ("Works at Deloitte", None, "week two at EY and I already miss the old Deloitte canteen"),
    ("Prefers to be reached on Telegram", None, "deleted Telegram, text me instead"),
])
def test_casual_changes_said_any_way(rules, old, key, new):
    """Stop 36's classes: lower-case names, the user's old things, tastes and beliefs that
    turned, things ended for good, habits ended by a count of days, keyed numbers; a birth by
    the baby's name, a first lease, a partner become a friend, a party voted, a faith found,
    a thing done with, gathering dust, knocked off the top spot or overtaken, an app deleted."""
    [c] = rules.compare(fact("b", new), [fact("a", old, key=key, days_ago=400)])
    assert c.older == "a", c


@pytest.mark.parametrize("old,new", [
    ("Lives in Glasgow", "moved to nights at the depot, glasgow traffic is easier at 5am"),   # a shift, not a city
    ("Lives in Glasgow", "portfolio moved to ana.design, the old site was slow"),            # a site, not a city
    ("Tom is her best friend", "had lunch with my old friend tom"),                          # an old friend is a friend
    ("Works at Accenture", "priya just got let go from accenture, awful news"),               # someone else
    ("Has a Visa card", "tore up the parking ticket, not paying that"),                      # another thing torn up
    ("Reads mostly thrillers", "haven't touched a cookbook in years"),                       # another kind of book
    ("Smokes", "three weeks without a holiday, I need a break"),                             # not a habit
    ("Pregnant, due in June", "the puppies are 3 weeks old and chaos"),                      # the pets' age
    ("Drinks two coffees a day", "swapped desks with Omar so I'm closer to the coffee machine"),   # another thing swapped
    ("Likes Radiohead", "radiohead are dead good live, saw them last night"),                   # "dead good", not dead to me
    ("Uses Telegram for everything", "my sister is off telegram for good, she says it's too noisy"),  # someone else
    ("Votes Conservative", "the conservatives lost the by-election, what a night"),             # lost an election, not the user
    ("Practises on Duolingo daily, 200-day streak", "my brother's duolingo streak died, he's gutted"),  # someone else's
    ("Emergency contact: sister Ana", "should I change my emergency contact to Sam?"),        # a question the user asks
    ("Email: ana@old.com", "can you update my brother's email to x@y.com"),                    # someone else's
    ("Lives in Berlin", "can you update me on the Berlin weather?"),                            # not a change of anything
    ("Mobile: 0412 889 301", "phone's completely dead, messaging from my laptop today"),         # the device, not the number
    ("Mobile: 0412 889 301", "my phone stopped working after I dropped it in the bath"),         # the same
    ("Can not swim", "my son swam a whole length today!"),                                   # someone else
    ("Lives alone in a studio", "got the keys to my own place, still just me and the cat"),  # still alone
    ("Lives in Cork", "settling into the new job, the team is lovely"),                     # not a place    # a pursuit not overtaken: a step, a failure, a hedge, someone else's outcome, a question
    ("Planning a road trip to Iceland", "booked the car for iceland, so excited"),          # a step, not the outcome
    ("Planning a road trip to Iceland", "will be back from iceland on the 12th"),           # not yet
    ("Looking for a studio in Neukölln", "still looking for a studio in neukölln, two viewings were awful"),
    ("Training for the Berlin half marathon", "my sister got her berlin medal today"),      # someone else's
    ("Learning to drive", "failed my driving test again, rebooked for June"),              # still learning
    ("Studying for the PMP exam", "passed the cake round at work, the PMP is next month"),  # another thing passed
    ("Wants to open a pottery studio", "is the pottery studio open on sundays?"),           # a question
    # set B's kind of look-alike
    ("Lives in Dublin", "I'm moving to Lisbon on the 3rd of May, flights booked"),     # not yet
    ("Works at Deloitte", "starting at EY in two weeks, so excited"),                  # not yet
    ("Is on Telegram", "deleted the Telegram group for the book club"),                 # a group, not the app
    ("Has one son", "my sister's baby Ines arrived at dawn"),                          # someone else's
    ("Favourite band is Blur", "Blur are still top of my list"),
    ("Drinks green tea every morning", "the teapot is gathering dust since the kettle broke"),  # another thing
])
def test_casual_changes_leave_other_things_alone(rules, old, new):
    """What those classes must not read: a shift, a site, an old friend, someone else's news,
    another thing torn up or not touched, a pet's age, someone else's first swim, a change
    still scheduled, a pursuit not yet overtaken."""
    assert rules.compare(fact("b", new), [fact("a", old, days_ago=400)]) == [], new


@pytest.mark.parametrize("old,new", [
    ("Planning a road trip to Iceland", "back from iceland, the ring road was unreal"),
    ("Looking for a studio in Neukölln", "apartment hunt is over, signed for a studio in neukölln"),
    ("Training for the Berlin half marathon", "the berlin medal is hanging in the hallway"),
    ("Saving up for a Vespa", "bought the vespa!! red, obviously"),
    ("Waiting to hear back about the Camden flat", "the camden flat went to someone else"),
    ("Wants to open a pottery studio", "the pottery studio has been open a month now"),
    ("Setting up a newsletter for the shop", "the newsletter is live, 200 subscribers already"),
])
def test_a_pursuit_is_overtaken_by_its_outcome(rules, old, new):
    """A plan, a search, training or an application, overtaken by the outcome of the same
    thing (`pursuit` and `outcome` guards)."""
    [c] = rules.compare(fact("b", new), [fact("a", old, days_ago=120)])
    assert c.older == "a" and "overtaken" in c.evidence, c


@pytest.mark.parametrize("old,key,new,value", [
    ("Works at Deloitte", "employer", "my first payslip from Accenture landed today, not bad", "Accenture"),
    ("Lives in Leeds", "city", "Moved to Rio de Janeiro last month", "Rio de Janeiro"),
    ("Works at Deloitte", "employer", "I work at Bank of America now", "Bank of America"),
    ("Drives a Honda Civic", None, "Just bought a Tesla Model 3 finally", "Tesla Model 3"),
    ("Works at Deloitte", "employer", "Started at Johns Hopkins hospital this week", "Johns Hopkins"),
])
def test_a_name_ends_before_the_lower_case_words_after_it(rules, old, key, new, value):
    """In a clause with capitals, a name read as a slot's new value ends at its last
    capitalised or numbered word: "Accenture landed" is not an employer."""
    [c] = rules.compare(fact("b", new), [fact("a", old, key=key, days_ago=200)])
    assert c.update["new_value"] == value, c


@pytest.mark.parametrize("old,new", [
    ("Works as a nurse at St Mary's", "Tamsin just got hired at Guy's hospital, I'm so proud of her"),
    ("Accountant at KPMG", "Dev handed in his notice at KPMG today and I'm gutted"),
    ("Vegetarian", "Marco has gone vegan and I'm the only one eating cheese now"),
    ("Single", "Ines just got engaged!! I need a speech for the party"),
    ("Phone: 07700 900123", "Note: Jo's number is now 07700 900456, mine is the same"),
    ("Plays violin to grade 6", "my eldest passed her grade 2 violin today!"),
    ("Works at Monzo", "had a pint with some ex-Monzo folks last night, I miss nobody"),
    ("Lives in Leeds", "we keep talking about moving to York, the schools are better"),
    ("Lives in Bristol", "we're seriously talking about leaving Bristol, rents are mad"),
])
def test_someone_elses_news_told_by_the_user_is_theirs(detector, rules, old, new):
    """A speaker who says I/me/my and opens a clause with someone's name and verb reports that
    person's news (`named_subject` guard; the learned layer does not weigh it either); a
    child, ex-colleagues, a move still talked about are not the user's change."""
    assert rules.compare(fact("b", new), [fact("a", old, days_ago=300)]) == [], new
    assert detector.compare(fact("b", new), [fact("a", old, days_ago=300)]) == [], new


@pytest.mark.parametrize("old,new,subject", [
    ("Husband is Harold", "Harold passed away in March and the house is so quiet.", "u1"),   # the older fact names him
    ("Works at Google", "Priya joined Stripe in March.", "u1"),        # a memory in the third person: the user's
    ("Works at Google", "Google let me go last week, still in shock", "u1"),
    ("Works at Monzo", "I'm ex-Monzo now, started at Wise on Monday", "u1"),
    ("Works as a nurse at St Mary's", "Tamsin got hired at Guy's hospital and I start on Monday", "u_tamsin"),
])
def test_a_named_change_that_is_the_users_still_counts(rules, old, new, subject):
    """Not someone else's news: a name the older fact holds too, a text in the third person, a
    name that is what the match reads, the subject's own name."""
    [c] = rules.compare(fact("b", new, subject=subject), [fact("a", old, days_ago=300, subject=subject)])
    assert c.older == "a", c


@pytest.mark.parametrize("old,key,new", [
    # a name and an irregular past tense, or a name's "'s gone"
    ("Works at Zalando", "employer", "Tobias left Zalando for N26 last week, but I'm not going anywhere"),
    ("Vegetarian", "diet", "Lena's gone vegan for January and I'm cooking two dinners now"),
    # a parent named by kinship
    ("Lives in Cardiff", "city", "Since Dad moved to Portugal my weekends are just me and the dog"),
    # people of mine, and other people as a clause's subject
    ("Works at Deliveroo", "employer", "a mate of mine quit Deliveroo for Just Eat, he says the pay is better"),
    ("Owns a flat in Govan that they let out", None, "the lodgers in the Govan flat handed in their notice, I need new ones"),
    # someone else's past habit
    ("Has a parrot called Mango", None, "my gran's house is so quiet now, Mango still whistles the song she used to sing"),
    # one occasion called off, not the habit
    ("Swims at the lido on Fridays", None, "Friday's free after all, the swim session is cancelled"),
    # an ex- names what the user left, not the employer beside it
    ("Works at Canva", "employer", "Staff Engineer, Canva (ex-Atlassian)"),
    # a citizenship not held yet
    ("Indian citizen", "nationality", "German citizenship interview next week, fingers crossed"),
    ("Brazilian", "nationality", "Portuguese citizenship application sent off today"),
])
def test_other_peoples_news_and_one_offs_are_not_the_users_change(rules, old, key, new):
    """A name and its irregular past tense ("Tobias left"), a parent named by kinship ("Dad
    moved"), "a mate of mine", tenants or lodgers as a clause's subject, "she used to", one
    occasion called off, what an ex- names, a citizenship still being applied for."""
    assert rules.compare(fact("b", new), [fact("a", old, key=key, days_ago=300)]) == [], new


@pytest.mark.parametrize("old,new", [
    ("Works at Zalando", "I left Zalando last week, onwards"),
    ("Plays five-a-side on Tuesdays", "five-a-side is cancelled for good, the league folded and I quit"),
    ("Works at Atlassian", "Staff Engineer, Canva (ex-Atlassian)"),
    ("Smokes", "I used to smoke, two years clean now"),
])
def test_the_users_own_change_beside_those_guards_still_counts(rules, old, new):
    """The same words told of the user still end the older fact."""
    [c] = rules.compare(fact("b", new), [fact("a", old, days_ago=300)])
    assert c.older == "a", c


@pytest.mark.parametrize("old,key,new", [
    # "used to" before a noun or an -ing form: accustomed to it, not a past habit
    ("Plays the cello in an orchestra", None, "Switching to viola feels odd, I'm so used to the cello's weight"),
    ("Runs every morning", None, "Honestly I'm used to running in the dark by now"),
    # "said yes" answers a proposal only when one is there
    ("Single", "relationship_status", "A colleague asked me out for drinks and I said yes, no idea what to wear"),
    # everyone as a clause's subject
    ("Single", "relationship_status", "Everyone at my office is getting married this year, I've bought four toasters"),
    # a dream
    ("Lives in Manchester", "city", "Dreamed I'd moved to Tokyo and couldn't read any signs, woke up so confused"),
    ("Works at Ocado", "employer", "had a dream I worked for NASA, the commute was a rocket"),
    ("Lives in Porto", "city", "Had the strangest dream that I'd moved to Lisbon and opened a bakery"),
    ("Works at Ocado", "employer", "have this recurring bad dream where I work at a call centre again"),
    # someone else's contact details
    ("Phone is 07700 900123", "phone", "The plumber changed his number, it's 07700 900456 now, can you save it"),
    ("Email is ana@moreira.pt", "email", "our printer's sales team have a new address: orders@printhaus.pt"),
])
def test_habits_of_speech_dreams_and_other_peoples_details_are_not_the_users_change(rules, old, key, new):
    """Stop 40's classes from four more authors' false alarms: "used to" meaning accustomed,
    a "said yes" with no proposal, everyone as the subject, a dream, someone else's number or
    address."""
    assert rules.compare(fact("b", new), [fact("a", old, key=key, days_ago=300)]) == [], new


@pytest.mark.parametrize("old,key,new", [
    ("Plays the cello in an orchestra", None, "I used to play the cello, sold it when the twins arrived"),
    ("Single", "relationship_status", "He proposed on the pier last night and I said yes!"),
    ("Single", "relationship_status", "she asked me to marry her at the top of Arthur's Seat and I said yes"),
    ("Single", "relationship_status", "I said yes and the ring was her gran's"),
    ("Lives in Manchester", "city", "Moved to Tokyo in March, still can't read any signs"),
    ("Works at Ocado", "employer", "landed my dream job at NASA, start date was Monday, badge works"),
    ("Works at Ocado", "employer", "I finally have the dream job: started at NASA on Monday, badge works"),
    ("Phone is 07700 900123", "phone", "I changed my number, it's 07700 900456 now"),
    ("Phone is 07700 900123", "phone", "The user changed their number to 07700 900456"),
    ("Phone is 07700 900123", "phone", "my work phone has a new number: 07700 900456"),
])
def test_the_users_own_change_beside_stop_40s_guards_still_counts(rules, old, key, new):
    """The user's own versions of those: a past habit, a proposal answered, a move, a dream
    job, their own new number (a phone of theirs that "has a new number" is not someone else)."""
    [c] = rules.compare(fact("b", new), [fact("a", old, key=key, days_ago=300)])
    assert c.older == "a", c


@pytest.mark.parametrize("old,key,new", [
    ("Works at Siemens Healthineers", None, "Last day at Siemens Healthineers was Thursday, they gave me a plant"),
    ("Junior analyst", "job_title", "my manager finally made me a senior analyst, same desk though"),
    ("Has a hamster called Biscuit", None, "RIP Biscuit, you were the best tiny gremlin"),
    ("Works at Infosys", "employer", "my new Wipro badge has the worst photo ever"),
    ("Works at Aldi", "employer", "handed back my Aldi uniform and name badge this morning, onwards"),
    ("kofi.b@uni-ghana.edu.gh", "email", "the uni shut my inbox, kofi.boateng.work@gmail.com is the one to use"),
])
def test_stop_40s_endings_and_replacements(rules, old, key, new):
    """Recall classes from four more authors' misses: a last day at the employer, a title
    someone made the user, "RIP" and a name, an e-mail that is "the one to use", a new
    employer's badge, the old one's uniform handed back."""
    [c] = rules.compare(fact("b", new), [fact("a", old, key=key, days_ago=300)])
    assert c.older == "a", c


@pytest.mark.parametrize("old,key,new", [
    ("Works at Siemens Healthineers", None, "Last day at Siemens Healthineers is next Thursday, then two weeks off"),
    ("Works at Siemens Healthineers", None, "Last day at Siemens Healthineers is the 14th, then two weeks off"),
    ("Junior analyst", "job_title", "the new intern made me a coffee, sweetest kid"),
    ("Has a hamster called Biscuit", None, "rip my knees after that hike, Biscuit slept through it all"),
    ("Works at Infosys", "employer", "lost my Infosys badge again, security were not amused"),
    ("Works at Aldi", "employer", "my sister got the job at Lidl, so proud of her"),
    ("kofi.b@uni-ghana.edu.gh", "email", "cc kofi.boateng.work@gmail.com too, just for the Lagos trip"),
])
def test_beside_stop_40s_endings_the_look_alikes_stay_quiet(rules, old, key, new):
    """A last day still to come, a coffee someone made the user, "rip" about something else,
    a second address for one trip."""
    assert rules.compare(fact("b", new), [fact("a", old, key=key, days_ago=300)]) == [], new


def test_an_ending_cue_does_not_end_a_fact_already_past(rules):
    """"Previously at Wealthsimple" already says it ended: an ex- of the same employer restates it."""
    assert rules.compare(fact("b", "Staff Engineer, Shopify (ex-Wealthsimple)"),
                         [fact("a", "Previously at Wealthsimple", days_ago=300)]) == []


def test_a_negated_telling_does_not_deny_what_follows(rules):
    """"Haven't told my manager at Revolut" denies the telling, not the job; "I don't work at
    Revolut any more" still ends it."""
    old = fact("a", "Data scientist at Revolut", days_ago=300)
    assert rules.compare(fact("b", "haven't told my manager at Revolut yet, obviously"), [old]) == []
    [c] = rules.compare(fact("b", "I don't work at Revolut any more"), [old])
    assert c.older == "a"


@pytest.mark.parametrize("old,key,new", [
    # what remains, not what was left
    ("Holds an Irish passport", None, "my Irish passport still has three years left on it, no rush"),
    ("Drives a Ford Focus", None, "the Focus has eighteen months of payments left, then it's ours"),
    ("Has a tabby cat called Miso", None, "dropped Miso at the cattery and left her there for four nights, felt awful"),
    ("Has a tabby cat called Miso", None, "Left Miso with my neighbour for the weekend while I was in Porto"),
    # the people or the training of a time, not the thing itself
    ("Works at Zalando", "employer", "my old Zalando teammate Ines is getting married in June"),
    ("Trained as a carpenter", None, "my old carpentry course came in handy fixing the shed door"),
    # a one-off
    ("Gym on Thursdays", None, "swapped my Thursday gym for Friday just this once, dentist again"),
    # other people's news: someone from work, by full name, someone the user mentors or trains
    ("Vegetarian", "diet", "the new starter on my team is vegan and I keep forgetting"),
    ("Senior designer at Canva", None, "one of my mentees just got hired at Figma, so proud"),
    ("Works at Unilever", "employer", "FYI Tomasz Nowicki left Unilever last week, I'm covering his accounts until June"),
    ("j.silva@acme.io", "email", "Joana from accounts changed her email to joana.silva@acme.io, mine is the same"),
    # an offer taken whose start is still to come
    ("Works at Philips", "employer", "I've accepted an offer from Bosch and start there on 3 March, still at Philips till then"),
])
def test_stop_46s_look_alikes_stay_quiet(rules, old, key, new):
    """False-alarm classes of t60-t67 (stop 46): "N years left" is what remains; a pet left
    somewhere for a while; "my old X teammate/course"; a change "just this once"; a new
    starter's, a mentee's, a named colleague's news (with a surname, or "from accounts"); an
    accepted offer that starts later."""
    assert rules.compare(fact("b", new), [fact("a", old, key=key, days_ago=300)]) == [], new


@pytest.mark.parametrize("old,key,new", [
    ("Works at Unilever", "employer", "I left Unilever last week, the farewell drinks were lovely"),
    ("Has a tabby cat called Miso", None, "we left Miso with my aunt when we emigrated, she is hers for good now"),
    ("Works at Philips", "employer", "I've accepted an offer from Bosch and started there on Monday"),
    ("Gym on Thursdays", None, "swapped my Thursday gym for Friday mornings for good"),
    ("j.silva@acme.io", "email", "changed my email to joana.silva@acme.io, please use that one"),
])
def test_beside_stop_46s_look_alikes_the_changes_still_read(rules, old, key, new):
    """The user's own leaving, a pet left behind for good, an offer already started, a swap for
    good, the user's own new e-mail."""
    found = rules.compare(fact("b", new), [fact("a", old, key=key, days_ago=300)])
    assert [c.older for c in found] == ["a"], new


@pytest.mark.parametrize("old,key,new", [
    ("Allergic to peanuts", None, "peanut-free snacks for the flight please, the usual"),
    ("Coeliac, avoids gluten", None, "found a gluten-free bakery two streets away, heaven"),
    ("Can't drink milk", None, "dairy-free hot chocolate for me, thanks"),
    ("Did a BA in History at Leeds", None, "my old Leeds tutor emailed out of nowhere, she's retiring"),
    ("Left art school in 2017", None, "a friend from the art school I left back in 2017 has a show in Ghent"),
    ("Has a bonsai called Ficus Rex", None, "leaving Ficus Rex with my sister while I'm away in Lima, how often should she water it?"),
])
def test_stop_46s_second_look_alikes_stay_quiet(rules, old, key, new):
    """More false-alarm classes (t68-t75, read after they were measured): a "-free" request
    restates an allergy or an intolerance; "my old X tutor"; an ending dated to the year the
    older fact already names; a thing left with someone while the user is away."""
    assert rules.compare(fact("b", new), [fact("a", old, key=key, days_ago=300)]) == [], new


@pytest.mark.parametrize("old,key,new", [
    ("Smokes", None, "three months smoke-free today, never going back"),
    ("Eats meat", None, "I'm meat-free now, fully vegetarian since January"),
    ("0412 558 903", "phone", "whoever has my old 0412 number, sorry, use 0433 271 684"),
    ("Has a bonsai called Ficus Rex", None, "I left Ficus Rex with my sister for good, she loves it more than I did"),
])
def test_beside_stop_46s_second_look_alikes_the_endings_still_read(rules, old, key, new):
    """"smoke-free" still ends smoking and "meat-free" eating meat; a number, not a year, is
    what "my old 0412 number" ends; a thing left with someone for good."""
    found = rules.compare(fact("b", new), [fact("a", old, key=key, days_ago=300)])
    assert [c.older for c in found] == ["a"], new


@pytest.mark.parametrize("old,key,new", [
    # a forwarded message is its sender's
    ("Lives in Bristol", "city", "Fwd: we've moved!\nFrom: Marta\nWe're finally in the new place in Cork, update your address book"),
    ("sam@fernhill.org", "email", "FW: new contact details\nHi all, please use my new address sam.k@outlook.com from now on"),
    # someone named, news of theirs, told by a user who asks the assistant for something
    ("Works at Deloitte", "employer", "Joel got let go from Deloitte today. Could you move our dinner to Friday?"),
    ("Single", None, "Priya's got a new girlfriend and they're inseparable. Can you suggest a gift for her birthday?"),
    ("Lives in Denver", "city", "Marco's moving to Phoenix for the warm weather, I'll miss our Sunday hikes"),
    # a clause whose subject is he or she
    ("Works at Siemens", "employer", "He handed in his notice at Siemens this morning, so we're celebrating tonight"),
    # a named person right before the ending, in a clause opened by "since" or "after"
    ("Junior pharmacist", None, "Yusuf runs the dispensary now, since Leona retired in May"),
    # a preference booked for someone named
    ("Prefers aisle seats", None, "Reserved a window seat for Tomás on the Madrid flight, he loves watching the takeoff"),
    # a stay of a fortnight
    ("Lives in Cardiff", "city", "Staying in Galway for a fortnight to help my aunt after her operation"),
    # one occasion called off
    ("Runs the Sunday parkrun", None, "Sad news: the Sunday parkrun was cancelled today."),
    ("Runs the Sunday parkrun", None, "Sad news: parkrun this Sunday is cancelled."),
    # "left" as a side
    ("Plays the cello", None, "left-handed players get a raw deal with most instruments, honestly"),
    ("Has a tabby cat", None, "the tabby keeps sleeping on my left arm and it's gone numb"),
])
def test_stop_47s_look_alikes_stay_quiet(rules, old, key, new):
    """False-alarm classes of t76-t83 (stop 47, read after stop 46 measured them): a forwarded
    message; a named person's news told with a request to the assistant ("could you ..."), or
    with "'s" and a verb in -ing; a clause opening with he or she; a name right before the
    ending in a "since" clause; a preference booked for someone named; a fortnight's stay; one
    occasion called off; "left" as a side."""
    assert rules.compare(fact("b", new), [fact("a", old, key=key, days_ago=300)]) == [], new


@pytest.mark.parametrize("old,key,new", [
    ("Lives in Bristol", "city", "We've finally moved into the new place in Cork, update your address book"),
    ("Works at Deloitte", "employer", "I got let go from Deloitte today. Could you help me update my CV?"),
    ("Single", None, "I've got a new girlfriend and we're inseparable. Can you suggest a gift for her birthday?"),
    ("Works at Siemens", "employer", "I handed in my notice at Siemens this morning, so we're celebrating tonight"),
    ("She works at Siemens", None, "She handed in her notice at Siemens"),    # memories about the user as "she"
    ("Works at Deloitte", "employer", "Joel got let go from Deloitte today."),     # no request: a memory about the user
    ("Runs the Sunday parkrun", None, "Sad news: the Sunday parkrun was cancelled."),
    ("Prefers aisle seats", None, "Booked a window seat for myself, I prefer window seats now"),
    ("Has a tabby cat", None, "we left the tabby with my parents when we emigrated, she lives with them for good now"),
])
def test_beside_stop_47s_look_alikes_the_changes_still_read(rules, old, key, new):
    """The user's own move, job loss, girlfriend and notice; third-person memories with no
    first person nor request in them (read as the user's, as before); parkrun called off with no one occasion
    named; a seat taste that turned; a pet left for good."""
    found = rules.compare(fact("b", new), [fact("a", old, key=key, days_ago=300)])
    assert [c.older for c in found] == ["a"], new


@pytest.mark.parametrize("old,key,new", [
    # someone described as a clause's subject, in a text whose speaker says I/me/my
    ("Lives in Halifax", "city", "The woman who runs the bakery next door is moving to Winnipeg, we'll miss her bread"),
    # a co-author, a collaborator or a supervisor, also with a hyphenated word before them
    ("Lives in Bergen", "city", "My co-author Ingrid relocated to Tromsø, so we write over video now"),
    ("Works at ETH Zurich", "employer", "My long-standing collaborator Rolf just left ETH Zurich for Basel"),
    # "left" as what remains and as a side
    ("Vegetarian", None, "the only sandwich left was ham, so I skipped lunch"),
    ("Lives in Bath", "city", "the left one keeps slipping out, I need a new earring back"),
])
def test_stop_47s_second_look_alikes_stay_quiet(rules, old, key, new):
    """Second round of stop 47 (from t84-t91's false alarms, read once both were measured):
    someone described ("the woman who runs the bakery"); a co-author's or a collaborator's
    move; "left" as what remains ("the only sandwich left was") or a side ("the left one")."""
    assert rules.compare(fact("b", new), [fact("a", old, key=key, days_ago=300)]) == [], new


@pytest.mark.parametrize("old,key,new", [
    ("Single", None, "the man I married last week is already snoring on the sofa"),
    ("Lives in Halifax", "city", "The woman who runs the bakery next door to our new place in Winnipeg gave us bread"),
    ("Lives in Bergen", "city", "I relocated to Tromsø, so my co-author and I write over video now"),
    ("Works at ETH Zurich", "employer", "I just left ETH Zurich for Basel, the move went smoothly"),
])
def test_beside_stop_47s_second_look_alikes_the_changes_still_read(rules, old, key, new):
    """Someone described in a clause that names the user too ("the man I married", "our new
    place in Winnipeg"): the user's news; the user's own move and leaving."""
    found = rules.compare(fact("b", new), [fact("a", old, key=key, days_ago=300)])
    assert [c.older for c in found] == ["a"], new

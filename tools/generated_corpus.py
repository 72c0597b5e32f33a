"""Generated slot-labelled sentences for the topic model: many predicates and noun phrases per
slot, crossed with shared frames (tools/slot_corpus.py merges them in, ``use_generated``).

Why generated: a hand-written template teaches one phrasing. Here each slot lists what a
person does or has in that slot, as a first-person predicate ("signed the contract with
{CO}") and as a noun phrase ("my {CO} badge"), and the same frames wrap every slot alike
("I ...", "so I ... last week", memory style "Signed ...", "still getting used to ...").
A frame then says nothing about the slot: the slot is carried by the words inside it. The
"other" class gets the same frames around predicates and nouns that state nothing about a
slot (errands, weather, small things), so a frame never becomes a slot cue and content-free
chat keeps offering no topic.

Every line here was written for this project from the slot names, not from any eval case.
``templates(seed)`` returns slot -> templates with the fillers of slot_corpus.FILL.
"""
from __future__ import annotations

import random

PER_SLOT = 48            # generated templates per slot (other: OTHER_FACTOR times as many)
OTHER_FACTOR = 3

# Predicates: what "I ..." did or does in the slot (past, present, perfect, plans left out:
# a plan states nothing yet, the cue lexicons read hedges).
CLAUSES: dict[str, list[str]] = {
    "employer": [
        "signed the contract with {CO}", "started at {CO}", "got hired by {CO}", "joined {CO} as a {ROLE}",
        "am working for {CO} now", "have been at {CO} since the spring", "clocked in at {CO} for the first time",
        "got my {CO} email account set up", "met my new team at {CO}", "left {CO}", "resigned from {CO}",
        "was let go by {CO}", "moved over to {CO}", "accepted the offer from {CO}", "work at {CO}",
        "spent my first week at {CO} in trainings", "collected my {CO} badge", "got my first {CO} salary",
        "work remotely for {CO}", "do contract work for {CO}", "went back to {CO}",
    ],
    "job_title": [
        "got promoted to {ROLE}", "became a {ROLE}", "work as a {ROLE}", "am a {ROLE} now",
        "was made {ROLE}", "switched careers to {ROLE}", "trained as a {ROLE}", "stepped down as {ROLE}",
        "took on the {ROLE} role", "have been a {ROLE} for years", "retrained from {ROLE} to {ROLE}",
        "got the {ROLE} position", "interviewed for {ROLE} and got it",
    ],
    "employment_status": [
        "got laid off", "lost my job", "retired", "went freelance", "am between jobs",
        "am on parental leave", "started my own business", "am job hunting", "went part-time",
        "got a full-time contract", "am on sick leave", "went back to work", "took a sabbatical",
        "handed in my notice", "closed my business", "signed on as self-employed",
    ],
    "city": [
        "moved to {CITY}", "live in {CITY}", "relocated to {CITY}", "settled in {CITY}",
        "have lived in {CITY} for a year", "left {CITY}", "moved back to {CITY}", "am based in {CITY} now",
        "found a flat in {CITY}", "registered my address in {CITY}", "got a {CITY} library card",
        "changed my address to {CITY}", "packed up and headed to {CITY}", "grew roots in {CITY}",
        "swapped {CITY} for {CITY}", "landed in {CITY} for good",
    ],
    "home": [
        "bought a house", "moved into a new flat", "signed a new lease", "got the keys to our place",
        "moved in with my parents", "sold our flat", "rent a room in {AREA}", "moved to {STREET}",
        "live at {STREET}", "moved out of the shared house", "got a place with a garden",
        "downsized to a studio", "moved across town to {AREA}", "paid off the mortgage",
    ],
    "commute": [
        "cycle to work", "take the train to work", "drive to the office", "walk to work",
        "work from home full time", "take two buses to the office", "carpool with a colleague",
        "started riding the tram to work", "commute an hour each way", "stopped commuting",
        "take the ferry to work", "scooter to the office",
    ],
    "phone": [
        "got a new number", "changed my phone number to {PHONE}", "ported my number to a new carrier",
        "can be reached on {PHONE}", "dropped my old mobile number", "got a work phone, {PHONE}",
        "use {PHONE} now", "gave up my landline",
    ],
    "email": [
        "changed my email to {EMAIL}", "use {EMAIL} now", "closed my old inbox",
        "set up a new email address", "can be reached at {EMAIL}", "moved my mail to {EMAIL}",
        "stopped using my old email", "got a new work address, {EMAIL}",
    ],
    "handle": [
        "changed my handle to {HANDLE}", "renamed my account to {HANDLE}", "post as {HANDLE} now",
        "deleted my old account", "made a new profile, {HANDLE}", "am {HANDLE} everywhere now",
        "went private on my socials", "left Twitter",
    ],
    "relationship_status": [
        "got married", "got engaged", "got divorced", "broke up with my boyfriend", "am single again",
        "split up with my girlfriend", "am seeing someone", "separated from my husband",
        "moved in with my partner", "renewed our vows", "called off the engagement", "am dating again",
        "tied the knot", "filed for divorce", "got back with my ex",
    ],
    "partner": [
        "am dating {NAME}", "married {NAME}", "broke up with {NAME}", "met {NAME} on an app",
        "moved in with {NAME}", "got engaged to {NAME}", "have been with {NAME} for three years",
        "introduced {NAME} to my parents", "split from {NAME}", "went on a first date with {NAME}",
    ],
    "children": [
        "had a baby", "became a dad", "became a mum", "have {N} kids", "had our second child",
        "adopted a little girl", "am expecting twins", "sent my youngest to school", "have a son",
        "have a teenage daughter", "became a stepmum", "saw my eldest move out",
    ],
    "pets": [
        "adopted a {ANIMAL}", "have a {ANIMAL} called {PET}", "lost {PET}", "had to put {PET} down",
        "rehomed our {ANIMAL}", "got a second {ANIMAL}", "buried {PET} in the garden",
        "took {PET} to the vet", "walk {PET} twice a day", "rescued a {ANIMAL}", "have {N} {ANIMAL}s",
        "gave our {ANIMAL} to my aunt",
    ],
    "diet": [
        "went vegan", "became vegetarian", "eat meat again", "stopped eating meat", "am {DIET} now",
        "went back to eating fish", "quit dairy", "cut out gluten", "started eating keto",
        "gave up being vegetarian", "have been {DIET} for a year", "eat only plants",
    ],
    "food": [
        "love {FOOD}", "can't stand {FOOD}", "got into {FOOD}", "went off {FOOD}", "crave {FOOD} every day",
        "am allergic to {FOOD} now", "finally like {FOOD}", "stopped eating {FOOD}",
        "order {FOOD} every Friday", "learned to enjoy {FOOD}",
    ],
    "drink": [
        "quit coffee", "drink {DRINK} every morning", "gave up alcohol", "switched from {DRINK} to {DRINK}",
        "stopped drinking {DRINK}", "went sober", "drink only water now", "got hooked on {DRINK}",
        "have one {DRINK} a day", "cut back on {DRINK}",
    ],
    "habit": [
        "quit smoking", "started smoking again", "meditate every morning", "stopped biting my nails",
        "get up at five now", "gave up vaping", "journal every night", "stopped scrolling before bed",
        "walk ten thousand steps a day", "kicked the sugar habit", "go to bed at ten now",
        "started fasting twice a week",
    ],
    "sport": [
        "took up {SPORT}", "quit {SPORT}", "do {SPORT} {DAYS}", "ran my first {AMOUNT} race",
        "joined a {SPORT} club", "stopped {SPORT} after an injury", "play {SPORT} at weekends",
        "switched from {SPORT} to {SPORT}", "train for {SPORT} {DAYS}", "competed in {SPORT}",
    ],
    "hobby": [
        "took up {HOBBY}", "gave up {HOBBY}", "do {HOBBY} at weekends", "got into {HOBBY}",
        "signed up for a {HOBBY} class", "sold my {HOBBY} gear", "spend my evenings on {HOBBY}",
        "lost interest in {HOBBY}", "picked {HOBBY} back up", "joined a {HOBBY} group",
    ],
    "media": [
        "listen to {MUSIC} all day", "got into {MUSIC}", "stopped listening to {MUSIC}",
        "binge-watched {SHOW}", "gave up on {SHOW}", "read only {GENRE} now", "am obsessed with {SHOW}",
        "cancelled my streaming subscription", "switched from {MUSIC} to {MUSIC}",
    ],
    "device": [
        "switched to {DEVICE}", "bought a {DEVICE}", "replaced my {DEVICE} with a {DEVICE}",
        "use a {DEVICE} now", "sold my {DEVICE}", "dropped my {DEVICE} and got a new one",
        "upgraded to the latest {DEVICE}", "went back to {DEVICE}", "got a {DEVICE} for work",
    ],
    "car": [
        "bought {CAR}", "sold my car", "drive {CAR}", "leased {CAR}", "wrote off my car",
        "got rid of the car", "traded in my car for {CAR}", "passed my driving test",
        "gave up driving", "commute on {CAR}", "got my licence back",
    ],
    "ability": [
        "learned {SKILL}", "can play {SKILL} now", "got good at {SKILL}", "forgot most of my {SKILL}",
        "taught myself {SKILL}", "am fluent in {SKILL} now", "can't do {SKILL} anymore",
        "finally learned to swim", "picked up {SKILL} at work", "mastered {SKILL}",
    ],
    "language": [
        "speak {LANG}", "learned {LANG}", "am fluent in {LANG}", "started {LANG} lessons",
        "passed my {LANG} exam", "forgot my {LANG}", "am learning {LANG}", "speak {LANG} at home",
        "switched from {LANG} to {LANG} classes",
    ],
    "certification": [
        "passed the {CERT} exam", "got my {CERT}", "am {CERT} certified", "let my {CERT} lapse",
        "renewed my {CERT}", "failed the {CERT} exam", "earned the {CERT} certificate",
        "got my licence", "qualified as a {ROLE}",
    ],
    "study": [
        "enrolled in {DEGREE}", "graduated from {UNI}", "dropped out of {DEGREE}", "finished {DEGREE}",
        "started {DEGREE} at {UNI}", "defended {DEGREE}", "study at {UNI}", "got into {UNI}",
        "took a gap year", "went back to school", "am in my final year at {UNI}",
    ],
    "religion": [
        "converted to Islam", "became {RELIG}", "left the church", "am {RELIG}", "stopped going to mass",
        "started going to the temple", "lost my faith", "was baptised", "practise Buddhism",
        "go to synagogue on Fridays",
    ],
    "politics": [
        "vote {PARTY}", "joined {PARTY}", "switched my vote to {PARTY}", "left {PARTY}",
        "am {PARTY} now", "campaigned for {PARTY}", "stopped supporting {PARTY}",
        "became more {PARTY} over the years",
    ],
    "opinion": [
        "changed my mind about {TOPIC}", "now think {TOPIC} is fine", "am against {TOPIC}",
        "came around on {TOPIC}", "used to hate {TOPIC}", "support {TOPIC}", "am tired of {TOPIC}",
        "think {TOPIC} is overrated", "flipped on {TOPIC}",
    ],
    "health": [
        "was diagnosed with {ILL}", "got over {ILL}", "have {ILL}", "am in remission",
        "had knee surgery", "started medication for {ILL}", "beat {ILL}", "broke my arm",
        "got the all-clear from my doctor", "live with {ILL}", "had my appendix out",
    ],
    "family": [
        "lost my {REL}", "have {N} siblings", "reconnected with my {REL}", "stopped talking to my {REL}",
        "take care of my {REL}", "became an uncle", "became an aunt", "moved closer to my {REL}",
        "have a twin", "found out I have a half-brother",
    ],
    "travel": [
        "visited {CITY}", "went backpacking", "flew to {CITY}", "travel for work every month",
        "stopped flying", "took a road trip", "spent a month in {CITY}", "booked a trip to {CITY}",
        "have been to {N} countries",
    ],
    "schedule": [
        "work nights now", "moved to the early shift", "work four days a week", "have Fridays off",
        "work weekends", "switched to the late shift", "start at seven every day", "work nine to five",
    ],
    "other": [
        "watered the plants", "forgot my umbrella", "did the laundry", "missed the bus",
        "burned the toast", "cleaned the fridge", "found my keys", "lost a sock",
        "paid the electric bill", "tidied my desk", "called the plumber", "took the bins out",
        "read the news", "slept badly", "had a long shower", "made pancakes", "bought milk",
        "watched the rain", "fixed the shelf", "answered emails", "finished the puzzle",
        "ordered a pizza", "cooked pasta", "fell asleep on the sofa", "printed the tickets",
        "sent the report", "charged my laptop", "booked a haircut", "ran some errands",
        "wrote a shopping list", "returned the parcel", "baked a cake", "walked to the shop",
        "waited for the delivery", "dropped my coffee", "painted the fence", "had a nap",
    ],
}

# Noun phrases: something of the slot a sentence can be about.
NOUNS: dict[str, list[str]] = {
    "employer": ["my {CO} badge", "my {CO} laptop", "the {CO} office", "my manager at {CO}",
                 "my colleagues at {CO}", "the {CO} onboarding", "my {CO} payslip", "my job at {CO}"],
    "job_title": ["the {ROLE} role", "my new title", "the {ROLE} job", "my promotion to {ROLE}",
                  "my {ROLE} duties"],
    "employment_status": ["the job hunt", "my redundancy", "my retirement", "my notice period",
                          "the layoffs", "freelance life", "my parental leave"],
    "city": ["life in {CITY}", "the {CITY} flat", "my {CITY} neighbourhood", "the {CITY} weather",
             "the move to {CITY}", "the {CITY} metro", "my new {CITY} address"],
    "home": ["the new flat", "our new house", "the mortgage", "my landlord", "the new lease",
             "the house move", "our garden", "my flatmate", "the flat on {STREET}"],
    "commute": ["my commute", "the train to work", "the drive to the office", "my bike ride to work",
                "the bus into work", "the morning traffic"],
    "phone": ["my new number", "my phone number", "my old mobile number", "the new SIM"],
    "email": ["my new email", "my old inbox", "my email address", "the new address {EMAIL}"],
    "handle": ["my handle", "my new username", "my old account", "my profile {HANDLE}"],
    "relationship_status": ["the wedding", "the divorce", "the engagement", "the breakup",
                            "married life", "single life", "my marriage"],
    "partner": ["my girlfriend {NAME}", "my boyfriend {NAME}", "my wife {NAME}", "my husband {NAME}",
                "my partner {NAME}", "my ex {NAME}"],
    "children": ["the baby", "my kids", "the newborn", "my daughter", "my son", "the twins",
                 "school runs"],
    "pets": ["{PET} the {ANIMAL}", "our {ANIMAL}", "the new {ANIMAL}", "{PET}'s lead", "the {ANIMAL} bed",
             "the vet bills for {PET}"],
    "diet": ["my {DIET} diet", "meat", "the {DIET} cookbook", "plant-based meals", "my new diet"],
    "food": ["{FOOD}", "my favourite food", "the {FOOD} place down the road", "a plate of {FOOD}"],
    "drink": ["my morning {DRINK}", "{DRINK}", "decaf", "alcohol", "my daily {DRINK}"],
    "habit": ["cigarettes", "my morning routine", "vaping", "my bedtime", "my sleep schedule",
              "the nicotine patches"],
    "sport": ["{SPORT}", "my {SPORT} club", "the {SPORT} season", "my {SPORT} training", "the gym"],
    "hobby": ["{HOBBY}", "my {HOBBY} class", "my {HOBBY} kit", "the {HOBBY} group"],
    "media": ["{MUSIC}", "{SHOW}", "my playlist", "{GENRE} books", "the new season of {SHOW}"],
    "device": ["my {DEVICE}", "the new {DEVICE}", "my old {DEVICE}", "the {DEVICE} charger"],
    "car": ["{CAR}", "my car", "the new car", "my driving licence", "the car insurance"],
    "ability": ["{SKILL}", "my {SKILL} lessons", "my {SKILL} practice", "my {SKILL} level"],
    "language": ["my {LANG}", "{LANG} lessons", "the {LANG} course", "my {LANG} exam"],
    "certification": ["the {CERT} exam", "my {CERT} certificate", "the {CERT} course", "my licence"],
    "study": ["{DEGREE}", "my thesis", "uni", "my lectures at {UNI}", "the {UNI} campus", "my exams"],
    "religion": ["church", "my faith", "the mosque", "prayer", "the temple"],
    "politics": ["{PARTY}", "the election", "my vote", "the {PARTY} campaign"],
    "opinion": ["{TOPIC}", "the debate about {TOPIC}", "my view on {TOPIC}"],
    "health": ["my {ILL}", "the surgery", "my treatment", "the physio", "my prescription"],
    "family": ["my {REL}", "my parents", "the family", "my {REL}'s house"],
    "travel": ["the trip to {CITY}", "my flight", "my passport", "the holiday in {CITY}"],
    "schedule": ["the night shift", "my working hours", "my four-day week", "the rota"],
    "other": ["the weather", "this podcast", "my tea", "the meeting notes", "the bus strike",
              "the football score", "the new bakery", "the parcel", "my to-do list", "the traffic",
              "the rain", "this song", "the news", "dinner", "the printer", "the queue", "my inbox",
              "the film last night", "the neighbour's music", "the heating", "lunch", "the weekend"],
}

# Other languages, a few slots (predicates after the first person; memory style is the
# predicate alone).
CLAUSES_OTHER_LANGS: dict[str, list[str]] = {
    "employer": ["trabajo en {CO}", "empecé a trabajar en {CO}", "arbeite bei {CO}", "bin zu {CO} gewechselt",
                 "kerja di {CO}", "travaille chez {CO}", "trabalho na {CO}"],
    "city": ["vivo en {CITY}", "me mudé a {CITY}", "wohne in {CITY}", "bin nach {CITY} gezogen",
             "tinggal di {CITY}", "habite à {CITY}", "mudei para {CITY}"],
    "relationship_status": ["me casé", "me divorcié", "habe geheiratet", "sudah menikah", "suis célibataire"],
    "pets": ["tengo un perro", "adoptamos un gato", "habe einen Hund", "punya kucing"],
    "diet": ["soy vegetariano", "ya no como carne", "esse kein Fleisch mehr", "sou vegana"],
    "employment_status": ["me quedé sin trabajo", "bin in Rente", "sudah pensiun", "suis au chômage"],
}

CLAUSE_FRAMES = ["I {c}", "I {c}", "I just {c}", "so I {c}", "I finally {c}", "{C}", "{C}",
                 "User {c}", "I {c} last month", "I {c} recently", "btw I {c}", "I {c}, long story",
                 "I {c} and I'm happy about it", "I {c} this year", "well, I {c}"]
NOUN_FRAMES = ["{n} is great so far", "loving {n}", "still getting used to {n}", "{N} again",
               "can't stop thinking about {n}", "{N}, finally", "ugh, {n}", "so much going on with {n}",
               "a quick update on {n}", "{N} is a whole thing", "first week with {n}", "{N} this week",
               "all about {n} lately", "not sure about {n}"]


def _cap(s: str) -> str:
    return s[0].upper() + s[1:] if s and s[0].islower() else s


def templates(seed: int = 11) -> dict[str, list[str]]:
    """slot -> generated templates (distinct, seeded; fillers left for slot_corpus.FILL)."""
    rng = random.Random(seed)
    out: dict[str, list[str]] = {}
    for slot in CLAUSES:
        clauses = CLAUSES[slot] + CLAUSES_OTHER_LANGS.get(slot, [])
        nouns = NOUNS.get(slot, [])
        want = PER_SLOT * (OTHER_FACTOR if slot == "other" else 1)
        got: list[str] = []
        for _ in range(want * 6):
            if len(got) >= want:
                break
            if nouns and rng.random() < 0.35:
                n = rng.choice(nouns)
                t = rng.choice(NOUN_FRAMES).replace("{N}", _cap(n)).replace("{n}", n)
            else:
                c = rng.choice(clauses)
                t = rng.choice(CLAUSE_FRAMES).replace("{C}", _cap(c)).replace("{c}", c)
            if t not in got:
                got.append(t)
        out[slot] = got
    return out

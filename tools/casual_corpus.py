"""More self-written sentences for the topic model: casual, implicit phrasings per slot and a
large "no slot" class (tools/slot_corpus.py merges them in).

Why a separate block: a casual sentence says its slot by a side effect ("the new flat has no
signal": city), an ending without the word ("the house is so quiet without her": pets) or a
switch ("green bubbles again": device). Templates of that kind alone teach the topic model
that chatty wording is a slot cue, so content-free chat ("Note 3 on location", "what a day")
took topics and met more facts in the block index. So the same block also grows the "other"
class: weather, greetings, chores, feelings, notes and reminders, questions to the assistant,
other people's news and plans that state nothing about the user. Both sides also appear in
the same chat openers and tails (``casual_variant``), so a wrapper says nothing about a slot.

Every line here was written for this project from the slot names, not from any eval case.
"""
from __future__ import annotations

# Extra values for the filler lists of slot_corpus.FILL (merged, so every template sees them).
FILL_MORE: dict[str, list[str]] = {
    "CO": ["Nubank", "Rakuten", "Bosch", "Ocado", "Booking", "Wise", "Gojek", "Mercado Libre",
           "a bank", "the council", "a law firm", "an agency", "Nestlé", "Philips", "SAP"],
    "CITY": ["Utrecht", "Cork", "Quito", "Yogyakarta", "Montreal", "Krakow", "Dublin", "Seville",
             "Osaka", "Accra", "Perth", "Bordeaux", "Cardiff", "Ghent"],
    "NAME": ["Ines", "Felix", "Yuki", "Zara", "Hugo", "Amara", "Nico", "Rosa"],
    "PET": ["Nala", "Oscar", "Peanut", "Coco", "Bruno"],
    "DEVICE": ["Galaxy", "OnePlus", "Chromebook", "Surface", "Apple Watch"],
}

# Fillers only this block's templates use.
FILL_NEW: dict[str, list[str]] = {
    "WEATHER": ["raining", "so hot", "freezing", "foggy", "windy", "snowing", "grey", "sunny for once"],
    "GREET": ["hi", "hey", "hello there", "morning", "good evening", "yo", "hiya", "hey you"],
    "CHORE": ["do the laundry", "clean the fridge", "buy milk", "take the bins out", "water the plants",
              "pay the electric bill", "book a dentist appointment", "return the parcel", "iron shirts",
              "hoover the stairs", "defrost the freezer", "fix the shelf"],
    "FEEL": ["tired", "a bit off", "great", "bored", "stressed", "happy", "grumpy", "sleepy",
             "weirdly calm", "overwhelmed"],
    "THING": ["location", "employment", "preferences", "the meeting", "the project", "groceries",
              "ideas", "the budget", "travel", "contacts", "health", "misc", "the weekend", "books"],
    "K": ["0", "1", "2", "3", "7", "12", "19", "42"],
    "WHEN": ["last week", "in March", "a while ago", "this spring", "after the holidays", "recently",
             "two months ago", "over the summer"],
    "APP": ["Slack", "WhatsApp", "Teams", "the banking app", "Notion", "the calendar"],
    "SHOPITEM": ["a new kettle", "socks", "a lamp", "batteries", "a birthday card", "bin bags",
                 "a phone case", "light bulbs"],
}

T_MORE: dict[str, list[str]] = {
    "employer": [
        "my first all-hands at {CO} is tomorrow", "the {CO} onboarding buddy is very patient",
        "got my first {CO} paycheck", "{CO} finally sent me a laptop", "new job at {CO}, wish me luck",
        "my old boss would never do what they do at {CO}", "spent the day learning {CO}'s internal tools",
        "the {CO} security training took all morning", "starting at {CO} after the summer",
        "{CO} relocated me to the {CITY} office", "been at {CO} a month and I love it",
        "handed back my {CO} badge today", "no longer with {CO}", "{CO} and I parted ways",
        "I quit {CO}, best decision ever", "after five years at {CO} I'm moving on",
        "my {CO} contract got extended", "the {CO} team threw me a welcome lunch",
        "still getting used to the {CO} way of doing things", "{CO} is way more corporate than I expected",
        "took a job with {CO}", "signed with {CO} yesterday", "officially a {CO} employee",
        "my last paycheck from {CO} came in", "the {CO} office is so much closer than the old one",
        "trabajo para {CO} desde enero", "empecé en {CO} esta semana", "ich habe bei {CO} angefangen",
        "neuer Job bei {CO}", "baru masuk {CO} minggu ini", "udah resign dari {CO}",
        "je travaille chez {CO} maintenant", "comecei a trabalhar na {CO}",
    ],
    "job_title": [
        "the new {ROLE} role comes with a team", "they bumped me up to {ROLE}",
        "my title changed to {ROLE} on the org chart", "I'm officially the {ROLE} here",
        "interviewing candidates as the {ROLE} now", "my {ROLE} days are over",
        "switched from {ROLE} to {ROLE}", "took a step back from {ROLE} to {ROLE}",
        "ascendido a {ROLE}", "befördert zur {ROLE}", "sekarang jadi {ROLE}",
        "first week as {ROLE} and already drowning", "got the senior title at last",
    ],
    "employment_status": [
        "first Monday with no job to go to", "the layoffs hit my team and me with it",
        "my position was eliminated", "collecting unemployment for now", "handed in my resignation, no plan yet",
        "enjoying retirement, no alarms", "my own boss since spring", "a client paid my first invoice",
        "job offer accepted, the search is over", "back at work after a year off",
        "perdí el trabajo", "arbeitslos seit Mai", "lagi nganggur", "the startup folded so I'm looking",
    ],
    "city": [
        "the moving van arrived in {CITY} this morning", "still can't pronounce the street names in {CITY}",
        "new postcode, new {CITY} life", "my {CITY} bank account is finally open",
        "unpacking in {CITY} takes forever", "swapped {CITY} for {CITY}", "the flat hunt in {CITY} paid off",
        "the neighbours here in {CITY} are friendly", "{CITY} feels like home already",
        "left {CITY} for good", "first month living in {CITY}", "the rain in {CITY} never stops",
        "registered at the {CITY} town hall", "getting lost on the {CITY} metro", "my new commute across {CITY}",
        "said goodbye to {CITY} yesterday", "our {CITY} lease starts Monday", "a {CITY} resident now",
        "ahora vivo en {CITY}", "nos mudamos a {CITY}", "umgezogen nach {CITY}", "wir wohnen jetzt in {CITY}",
        "aku pindah ke {CITY} bulan lalu", "j'habite à {CITY} maintenant", "moro em {CITY} agora",
    ],
    "home": [
        "the new place has way more light", "our old flat's deposit came back", "moving boxes everywhere",
        "the landlord kicked us out", "first night in the new house", "we sold the flat",
        "living on my own for the first time", "my new roommate is tidy at least",
        "the new building has a gym", "the house move is done", "we're renting again",
        "the new flat is above a bakery", "we got the mortgage and the keys",
    ],
    "commute": [
        "two trains and a bus to get to work now", "biking in every day since we moved",
        "I drive to the office now", "my commute is ten minutes on foot", "back to the daily train",
        "fully remote, the train pass is cancelled", "the new route to work is longer",
    ],
    "phone": [
        "new phone number, save this one", "my old number doesn't work anymore", "switched carriers and got a new number",
        "call the new number, the old one is gone", "my number is changing next week",
    ],
    "email": [
        "my old email is dead, use the new one", "changed my email address", "I don't check the old inbox anymore",
        "new address for emails", "my school email got shut down",
    ],
    "handle": [
        "new handle, same me", "changed my username everywhere", "deleted all my socials",
        "back on Instagram after a break", "my old account is gone",
    ],
    "relationship_status": [
        "the wedding is booked", "said yes!", "we're done, it's over", "signed the divorce papers",
        "just us two now, married", "single life suits me", "engaged since Saturday",
        "we decided to go our separate ways", "back together with my ex", "not married anymore",
        "first holiday as a married couple", "nos casamos", "wir sind verlobt", "udah cerai",
    ],
    "partner": [
        "my partner {NAME} moved in", "{NAME} and I are over", "new boyfriend, his name is {NAME}",
        "my wife {NAME} got a new job", "dating {NAME} for two months now", "{NAME} is my fiancée now",
        "my ex {NAME} kept the flat", "mi pareja {NAME}",
    ],
    "children": [
        "sleepless nights with the newborn", "the baby is here", "our second one arrived",
        "{NAME} lost a tooth", "both kids now at school", "my son moved out for uni",
        "we're expecting again", "adopted our daughter this year", "the kids are grown up now",
        "tengo un hijo", "wir haben ein Baby",
    ],
    "pets": [
        "{PET} is gone, the vet couldn't help", "had to say goodbye to {PET}", "the {ANIMAL} died last night",
        "brought {PET} home from the shelter", "new {ANIMAL} in the house", "{PET} is with my parents now",
        "gave {PET} away to a farm", "{PET} is so old now", "the empty dog bed makes me sad",
        "no more litter boxes since {PET} passed", "a second {ANIMAL} joined the family",
        "nuestro perro murió", "unsere Katze ist gestorben",
    ],
    "diet": [
        "ate chicken for the first time in years", "not vegan anymore", "fully plant-based now",
        "I eat fish again", "gave up meat for good", "the steak was worth breaking my diet for",
        "no dairy since spring", "ya no como carne", "ich bin jetzt Veganer",
    ],
    "food": [
        "can't eat {FOOD} anymore", "I used to hate {FOOD} but now I love it", "{FOOD} makes me sick now",
        "my new favourite is {FOOD}", "off {FOOD} since that food poisoning",
    ],
    "drink": [
        "switched to decaf", "no coffee since the doctor told me", "only herbal tea now",
        "haven't touched alcohol in a year", "back on the beer", "three coffees a day again",
        "ya no bebo café", "trinke keinen Alkohol mehr",
    ],
    "habit": [
        "six months without smoking", "smoking again, stress", "I stopped running after the injury",
        "up at six every day now", "no more late nights", "I quit the gym", "vaping is done",
        "dejé el tabaco", "hab aufgehört zu rauchen", "berhenti merokok",
    ],
    "sport": [
        "hung up my football boots", "my first {SPORT} competition", "no more {SPORT} for me",
        "switched from {SPORT} to {SPORT}", "training for a triathlon now", "my knee ended my {SPORT}",
    ],
    "hobby": [
        "sold all my {HOBBY} supplies", "I don't do {HOBBY} anymore", "got really into {HOBBY} this year",
        "swapped {HOBBY} for {HOBBY}", "the {HOBBY} club closed", "my new hobby is {HOBBY}",
    ],
    "media": [
        "I'm over {MUSIC}", "only {MUSIC} on my playlists now", "stopped watching {SHOW}",
        "{SHOW} is my comfort show now", "switched from {GENRE} to {GENRE}",
    ],
    "device": [
        "green bubbles again, back on Android", "the new {DEVICE} is so fast", "retired my old {DEVICE}",
        "swapped my {DEVICE} for a {DEVICE}", "my {DEVICE} died so I got a {DEVICE}",
        "setting up the new {DEVICE}", "no more {DEVICE} for me", "ganti laptop ke {DEVICE}",
    ],
    "car": [
        "sold the old car for scrap", "we're car-free now", "the new car arrived",
        "traded my {CAR} for {CAR}", "the car is gone after the accident", "first road trip in {CAR}",
        "vendimos el coche", "mobil baru akhirnya datang",
    ],
    "ability": [
        "can finally swim a length", "passed the driving test on the third try", "I can't do {SKILL} anymore",
        "got good at {SKILL} this year", "took up {SKILL} from scratch", "my {SKILL} is way better now",
    ],
    "language": [
        "my {LANG} is good enough to chat now", "stopped learning {LANG}", "{LANG} lessons on hold",
        "dreaming in {LANG} now", "I can read {LANG} menus now",
    ],
    "certification": [
        "the {CERT} cert is mine", "let my {CERT} lapse", "failed the {CERT} exam", "got certified in {CERT}",
        "my licence got suspended", "finally qualified",
    ],
    "study": [
        "handed in the thesis at last", "I'm a graduate now", "left uni without finishing",
        "started my {DEGREE} this autumn", "the course is done", "my final grades are in",
        "terminé la carrera", "habe mein Studium abgebrochen", "lulus kuliah akhirnya",
    ],
    "religion": [
        "I don't go to church anymore", "converted last year", "I'm not a believer anymore",
        "back at the mosque every Friday", "praying again after years",
    ],
    "politics": [
        "not voting {PARTY} again", "I'm a {PARTY} member now", "switched sides this election",
        "tore up my {PARTY} card",
    ],
    "opinion": [
        "I've changed my mind about {TOPIC}", "{TOPIC} is fine actually", "turns out {TOPIC} is a good idea",
        "I'm done defending {TOPIC}", "no longer think {TOPIC} is bad",
    ],
    "health": [
        "the allergy is gone", "no more migraines since the new meds", "diagnosed with {ILL} this week",
        "the doctor says I'm clear now", "my back is fine now", "off the inhaler for good",
    ],
    "family": [
        "my {REL} passed last month", "my {REL} and I aren't talking", "my {REL} moved to {CITY}",
        "we buried my {REL} on Tuesday",
    ],
    "travel": [
        "the {CITY} holiday is off", "flights to {CITY} booked", "back home after two weeks in {CITY}",
    ],
    "schedule": [
        "switched to nights", "no more weekend shifts", "my hours are nine to five now",
        "back on days after months of nights",
    ],
    "other": [
        # weather and small talk
        "it's {WEATHER} out there", "{WEATHER} again, typical", "the weather is {WEATHER} today",
        "{GREET}!", "{GREET}, how are you", "{GREET}, quick question", "{GREET} again",
        "good night", "thanks, that helps", "ok cool", "haha", "lol", "sure", "sounds good",
        "never mind", "yes please", "no thanks", "one sec", "brb", "nice", "wow", "really?",
        "thank you so much", "that's funny", "I see", "makes sense", "got it", "fair enough",
        # feelings with no state
        "feeling {FEEL} today", "so {FEEL} this morning", "I'm {FEEL}, long day",
        "just {FEEL}, nothing new", "kind of {FEEL} tonight", "today was a lot",
        "what a week", "can't wait for the weekend", "need a nap", "need a holiday",
        # chores and errands
        "need to {CHORE} later", "remind me to {CHORE}", "don't forget to {CHORE}",
        "finally managed to {CHORE}", "should {CHORE} tomorrow", "{CHORE} before Friday",
        "bought {SHOPITEM} today", "ordered {SHOPITEM} online", "the {SHOPITEM} arrived broken",
        "grocery list: eggs, rice, apples", "shopping list for the weekend",
        # notes and reminders
        "Note {K} on {THING}", "note {K}: {THING}", "Note about {THING}", "{THING} notes, part {K}",
        "memo {K}", "reminder {K}", "todo {K}: {CHORE}", "entry {K}", "item {K} on the list",
        "draft {K} about {THING}", "test message {K}", "sample note {K}", "log entry {K} for {THING}",
        "meeting notes from {WHEN}", "notes on {THING} from {WHEN}", "see the doc on {THING}",
        "the {THING} summary is in the shared folder", "agenda for the {THING} call",
        # talking to the assistant
        "can you summarise this", "what did I say {WHEN}?", "remind me what we talked about",
        "tell me a joke", "what's the time in {CITY}?", "translate this to {LANG}",
        "help me write an email", "what should I cook tonight?", "recommend a film",
        "how do I reset my password on {APP}?", "is {APP} down?", "what's a good gift for my {REL}?",
        "how long does it take to boil an egg", "give me a recipe with {FOOD}",
        # apps and events with no state
        "{APP} keeps crashing", "got a weird message on {APP}", "muted the group chat on {APP}",
        "the power went out for an hour", "the train was late again", "missed the bus this morning",
        "the wifi is slow today", "the lift is broken again", "parcel delivered to the wrong door",
        "the concert {WHEN} was fun", "watched the game with friends", "a long walk in the park",
        "dinner at a new restaurant", "lunch with {NAME} was nice", "coffee with {NAME} later",
        "had drinks with {NAME} after work", "saw {NAME} at the market", "called my {REL} for an hour",
        "met {NAME} for brunch", "ran into an old classmate", "a quiet Sunday at home",
    ],
}
# other people's news (not the user's state): in the "no slot" class too
OTHER_PEOPLE = [
    "{NAME} got a new job at {CO}", "{NAME} is moving to {CITY}", "my {REL} got engaged",
    "{NAME} had a baby", "my {REL} adopted a {ANIMAL}", "{NAME} quit {CO}",
    "{NAME} started learning {LANG}", "my {REL} sold their car", "{NAME} went vegan",
    "my colleague {NAME} is leaving {CO}", "{NAME}'s {ANIMAL} ran away", "{NAME} broke up with her boyfriend",
    "my {REL} lives in {CITY} now", "{NAME} just got promoted", "{NAME} bought {CAR}",
]
T_MORE["other"] += [
    # wishes and maybes
    "maybe one day I'll live in {CITY}", "I wonder what working at {CO} is like",
    "would be fun to try {SPORT}", "someday I want a {ANIMAL}", "thinking about {HOBBY}, not sure",
    "what if I learned {LANG}?", "might get {CAR} eventually, who knows",
    # other languages, small talk
    "hola, ¿qué tal?", "hace mucho calor hoy", "guten Morgen", "es regnet schon wieder",
    "halo, apa kabar", "hujan terus hari ini", "bonjour à tous", "bom dia",
]
T_MORE["other"] += OTHER_PEOPLE

# Chat openers and tails a message may come wrapped in; every class gets them alike.
OPENERS = ["", "", "", "so ", "ok so ", "btw ", "guess what, ", "update: ", "fun fact: ", "hey, ",
           "just so you know, ", "quick one: ", "lol ", "ugh, ", "honestly ", "news: "]
TAILS = ["", "", "", " lol", " haha", " :)", "!", "!!", " ugh", " tbh", " fyi", " 🙂", "..."]


def casual_variant(text: str, rng) -> str:
    """``text`` inside a chat opener and tail (the first letter lowered after an opener)."""
    o, t = rng.choice(OPENERS), rng.choice(TAILS)
    body = text[0].lower() + text[1:] if o and text[:2] != "I " else text
    return f"{o}{body}{t}"

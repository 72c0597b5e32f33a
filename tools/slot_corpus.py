"""A self-written corpus of slot-labelled sentences for the topic model (tools/train_detector.py).

Every line below was written for this project (no eval case is copied): templates per slot,
in memory style ("Works at {CO}") and casual chat style ("first payslip from {CO} today"),
plus a little Spanish, German and Indonesian. ``sentences(seed)`` fills each template a few
times from the filler lists and returns ``(text, slot)`` pairs; ``other`` is chit-chat that
states nothing about the user, so the model learns when a text has no slot.
"""
from __future__ import annotations

import random

FILL = {
    "CO": ["Google", "Stripe", "Deloitte", "Grab", "Shopify", "Siemens", "Accenture", "Globant",
           "Zalando", "Monzo", "Tesco", "the NHS", "Amazon", "a startup", "Airbus", "Infosys",
           "Canva", "Revolut", "Spotify", "KPMG", "Unilever", "Tokopedia", "Atlassian", "IKEA"],
    "CITY": ["Leeds", "Lisbon", "Oakland", "Berlin", "Jakarta", "Manchester", "Austin", "Porto",
             "Denver", "Toronto", "Bandung", "Leipzig", "Hamburg", "Kyoto", "Nairobi", "Lyon",
             "Melbourne", "Seattle", "Valencia", "Glasgow", "Surabaya", "Bristol", "Madrid"],
    "AREA": ["Alfama", "Kreuzberg", "Brooklyn", "Clapham", "Neukölln", "the east side",
             "the old town", "Shoreditch", "the suburbs", "Kemang"],
    "STREET": ["Rua do Almada 80", "12 Elm Street", "Baker Street 221", "Calle Mayor 5",
               "Hauptstraße 14", "44 Queen's Road", "Jl. Sudirman 9", "7 Mill Lane"],
    "ROLE": ["product manager", "data analyst", "nurse", "software engineer", "teacher",
             "designer", "accountant", "team lead", "barista", "project manager", "paralegal",
             "sous chef", "senior analyst", "staff engineer", "marketing director", "pharmacist"],
    "NAME": ["Jonas", "Priya", "Tom", "Maya", "Leo", "Sam", "Aisha", "Marco", "Chen", "Ravi",
             "Elena", "Kofi", "Hana", "Diego", "Noor", "Ben", "Lucia", "Omar"],
    "PET": ["Pepper", "Miso", "Biscuit", "Toby", "Luna", "Mochi", "Rex", "Tofu", "Ziggy"],
    "ANIMAL": ["dog", "cat", "rabbit", "hamster", "parrot", "puppy", "kitten", "goldfish"],
    "N": ["two", "three", "four", "2", "3", "one", "five"],
    "LANG": ["Spanish", "Italian", "Japanese", "German", "Tagalog", "French", "Korean",
             "Portuguese", "Mandarin", "Arabic"],
    "SPORT": ["running", "swimming", "bouldering", "tennis", "yoga", "cycling", "boxing",
              "football", "rowing", "pilates", "climbing", "badminton"],
    "HOBBY": ["pottery", "chess", "knitting", "painting", "the choir", "juggling", "baking",
              "gardening", "photography", "woodworking", "journaling", "sewing"],
    "FOOD": ["sushi", "pizza", "spicy food", "mushrooms", "olives", "cilantro", "ramen",
             "dark chocolate", "tofu", "curry", "seafood", "pineapple on pizza"],
    "DRINK": ["coffee", "black coffee", "green tea", "oat lattes", "red wine", "beer",
              "matcha", "espresso", "kombucha", "energy drinks"],
    "DIET": ["vegetarian", "vegan", "pescatarian", "keto", "gluten-free", "dairy-free"],
    "MUSIC": ["jazz", "rock", "K-pop", "techno", "classical music", "hip hop", "metal",
              "country", "grunge", "opera"],
    "SHOW": ["Succession", "The Bear", "Severance", "Bluey", "One Piece", "Friends"],
    "GENRE": ["sci-fi", "crime novels", "fantasy", "biographies", "romance", "horror"],
    "DEVICE": ["iPhone", "Android", "Pixel", "Samsung", "MacBook", "ThinkPad", "Kindle",
               "iPad", "Windows laptop", "Garmin"],
    "CAR": ["a Honda Civic", "a Tesla", "a VW Golf", "a Prius", "a Vespa", "an old Volvo",
            "a Mini", "a Ford Focus", "an e-bike"],
    "SKILL": ["Python", "Excel", "Rust", "Photoshop", "SQL", "the piano", "the guitar",
              "touch typing", "knitting", "salsa", "sign language", "calligraphy"],
    "CERT": ["AWS Solutions Architect", "CPA", "PMP", "Azure", "CFA level 2", "first aid",
             "scuba", "TEFL", "Grade 6 piano", "black belt"],
    "DEGREE": ["a master's", "a PhD", "nursing school", "a law degree", "an MBA",
               "a coding bootcamp", "my thesis", "a diploma in design"],
    "UNI": ["UCL", "Stanford", "TU Berlin", "the Open University", "UI", "Edinburgh"],
    "RELIG": ["Catholic", "Muslim", "Buddhist", "Jewish", "atheist", "agnostic", "Hindu",
              "Protestant"],
    "PARTY": ["Labour", "the Greens", "Democrats", "Republicans", "the Tories", "liberal",
              "conservative", "left-wing"],
    "TOPIC": ["zoos", "homework", "crypto", "remote work", "nuclear power", "golf",
              "tabs vs spaces", "UFOs", "cars in city centres", "social media", "tipping"],
    "ILL": ["asthma", "migraines", "hay fever", "insomnia", "a peanut allergy", "diabetes",
            "back pain", "a bad knee", "anxiety", "a shellfish allergy"],
    "EMAIL": ["sam.k@gmail.com", "priya@fastmail.com", "j.doe@work.org", "maya_99@yahoo.com",
              "kofi@proton.me", "leo.b@outlook.com"],
    "HANDLE": ["@kofi_builds", "@maya.codes", "@sam_k", "@the_real_leo", "@priya_draws"],
    "PHONE": ["+44 7700 900123", "0812 3456 7890", "555-0142", "+1 415 555 0199",
              "07911 123456", "+62 811 223 344"],
    "REL": ["sister", "brother", "mum", "dad", "grandma", "best friend", "cousin", "uncle"],
    "DAYS": ["Mondays", "Thursdays", "weekends", "every morning", "after work", "Sundays"],
    "AMOUNT": ["5k", "10k", "twenty minutes", "an hour", "three times a week"],
}

T: dict[str, list[str]] = {
    "employer": [
        "Works at {CO}", "The user works for {CO}", "Employed by {CO}", "Is a {ROLE} at {CO}",
        "just joined {CO}!", "first week at {CO} done", "my first payslip from {CO} today",
        "onboarding at {CO} is a blur of laptops and badges", "got the offer from {CO}, starting Monday",
        "signed my contract with {CO}", "my new manager at {CO} seems great",
        "left {CO} after six years", "handed in my notice at {CO}", "{CO} let me go today",
        "I got laid off from {CO}", "my last day at {CO} was Friday", "now working at {CO}",
        "I'm at {CO} these days", "the {CO} office has free lunch, dangerous",
        "day one at the {CO} office in {CITY}", "team offsite with the {CO} crew",
        "Works as a contractor for {CO}", "Her employer is {CO}", "He is with {CO} now",
        "ahora trabajo en {CO}", "trabaja en {CO}", "arbeitet bei {CO}", "ich arbeite jetzt bei {CO}",
        "sekarang aku kerja di {CO}", "kerja di {CO}", "my badge for {CO} finally arrived",
        "the recruiter from {CO} called back with an offer and I took it",
        "moved over to {CO} from my old job", "jumped ship to {CO}", "poached by {CO}",
        "payroll at {CO} messed up my first salary", "probation at {CO} ends next week",
    ],
    "job_title": [
        "Works as a {ROLE}", "Is a {ROLE}", "The user's job title is {ROLE}", "Job: {ROLE}",
        "got promoted to {ROLE}!", "they made me {ROLE} today", "new title: {ROLE}",
        "I'm the {ROLE} now", "stepped up to {ROLE} this quarter", "demoted back to {ROLE}, ouch",
        "switched careers, I'm a {ROLE} now", "retrained as a {ROLE}", "my first shift as a {ROLE}",
        "quit being a {ROLE}", "no longer a {ROLE}", "trabajo como {ROLE}", "ich bin jetzt {ROLE}",
        "finally got the {ROLE} role", "my {ROLE} promotion came through",
    ],
    "employment_status": [
        "Is unemployed and looking for work", "Is between jobs", "Is a freelancer",
        "Is retired", "got laid off today", "made redundant this morning", "lost my job",
        "job hunting is brutal", "I'm self-employed now", "went freelance last month",
        "retired at last!", "officially unemployed", "started my own business",
        "back in full-time work", "the job search is over, I signed an offer",
        "on parental leave until spring", "currently on sabbatical", "working part-time now",
        "Is looking for a new job", "sending out CVs every day", "estoy en paro",
    ],
    "city": [
        "Lives in {CITY}", "The user lives in {CITY}", "Is based in {CITY}", "Home is {CITY}",
        "moved to {CITY} last month", "settling into {CITY}", "the commute from {CITY} is killing me",
        "{CITY} rents are insane", "three weeks in {CITY} and I still get lost",
        "the new flat in {CITY} has no signal", "our first winter in {CITY}",
        "relocated to {CITY} for work", "we finally left {CITY}", "packing boxes for the move to {CITY}",
        "the weather in {CITY} is grim, I miss home", "my neighbours in {CITY} are lovely",
        "found an apartment in {CITY}", "signed a lease in {CITY}", "got my {CITY} library card",
        "vivo en {CITY}", "me mudé a {CITY}", "wohnt in {CITY}", "bin seit März in {CITY}",
        "sekarang tinggal di {CITY}", "pindah ke {CITY}", "Grew up in {CITY}",
        "registered with a GP in {CITY}", "the view from our {CITY} balcony",
    ],
    "home": [
        "Lives at {STREET}", "Address: {STREET}", "Mailing address is {STREET}",
        "the new place on {STREET} gets no mail", "we moved into a house in {AREA}",
        "Lives in a flat in {AREA}", "our flat in {AREA} has a balcony", "we bought a house!",
        "got the keys to our new place", "Rents a studio", "the landlord is selling our flat",
        "moved in with my parents again", "Lives alone", "lives with two flatmates",
        "Jonas and I moved in together", "my flatmate moved out", "home is a narrowboat now",
        "Owns a house in {AREA}", "renting a room in {AREA}", "the new address is {STREET}",
    ],
    "commute": [
        "Takes the train to work", "Drives to work", "Cycles to the office", "Commutes by bus",
        "been cycling to work since the bike lane opened", "walk to work now, twenty minutes",
        "working from home full time, no more trains", "the commute is two hours each way",
        "sold the car, it's the bus for me now", "the tram to work is always late",
        "remote now, my commute is the hallway", "naik KRL ke kantor", "fahre mit dem Rad zur Arbeit",
    ],
    "phone": [
        "Phone number is {PHONE}", "Mobile: {PHONE}", "call me on {PHONE}",
        "new number: {PHONE}", "changed my number, it's {PHONE} now", "my old number is dead",
        "text me at {PHONE}", "got a new SIM, number is {PHONE}", "work phone is {PHONE}",
        "mi número es {PHONE}", "meine Nummer ist {PHONE}", "lost my phone and my number with it",
    ],
    "email": [
        "Email: {EMAIL}", "Email address is {EMAIL}", "reach me at {EMAIL}",
        "new email is {EMAIL}", "switched to {EMAIL}, the old inbox is dead",
        "my uni email was deactivated", "use {EMAIL} from now on", "my work email is {EMAIL}",
        "closed my old gmail account", "mi correo es {EMAIL}", "email me at {EMAIL}",
    ],
    "handle": [
        "Instagram: {HANDLE}", "Telegram handle is {HANDLE}", "on Twitter as {HANDLE}",
        "changed my handle to {HANDLE}", "deleted my Instagram", "deactivated LinkedIn",
        "find me on Discord as {HANDLE}", "my TikTok is {HANDLE}", "Active on LinkedIn",
        "quit Facebook for good", "new username: {HANDLE}", "GitHub: {HANDLE}",
    ],
    "relationship_status": [
        "Is single", "Is married", "Is engaged", "Is divorced", "Is in a relationship",
        "we broke up", "since the divorce things are quiet", "we got engaged!!",
        "we're getting married in June", "just got married", "we split last month",
        "I'm single again", "separated from my husband", "my ex moved out",
        "dating again after a long break", "back on the apps", "our wedding was perfect",
        "we called off the engagement", "estoy soltera", "wir haben uns getrennt",
        "Is happily married for ten years", "it's over between us", "first anniversary tomorrow",
    ],
    "partner": [
        "Partner: {NAME}", "Boyfriend is {NAME}", "Girlfriend: {NAME}", "Is married to {NAME}",
        "Her husband is {NAME}", "His wife {NAME} is a nurse", "my boyfriend {NAME}",
        "date night with {NAME}", "{NAME} proposed!", "{NAME} and I broke up",
        "my new girlfriend {NAME} is amazing", "met someone, {NAME}, we've been seeing each other",
        "my fiancé {NAME}", "{NAME} moved out", "spouse: {NAME}", "mi novio {NAME}",
    ],
    "children": [
        "Has {N} kids", "Has a daughter", "Has two sons", "Children: {N}", "Has no children",
        "the baby arrived on Tuesday!", "our daughter was born", "we're expecting our first",
        "pregnant with number three", "our son turned 6", "{NAME} started school today",
        "the twins are teething", "school run with all {N} kids", "we adopted a little boy",
        "my kids are grown up and moved out", "Is a father of {N}", "tiene {N} hijos",
        "three kids under five, send help", "our youngest starts nursery",
    ],
    "pets": [
        "Has a {ANIMAL} named {PET}", "Has {N} cats", "Owns {N} dogs", "Pets: a {ANIMAL} called {PET}",
        "{PET} passed away", "we had to put {PET} down", "{PET} didn't make it through the winter",
        "adopted a {ANIMAL}!", "meet {PET}, my new {ANIMAL}", "we rehomed {PET}",
        "{PET}'s new little brother joined us", "{N} cats is too many", "walking {PET} in the rain",
        "the vet bill for {PET} was huge", "lost my {ANIMAL} last week", "no pets anymore",
        "we got a {ANIMAL}", "{PET} ran away", "Is allergic to cats so has no pets",
        "fostering a {ANIMAL} for the shelter", "tengo {N} perros", "unser Hund {PET}",
    ],
    "diet": [
        "Is {DIET}", "Follows a {DIET} diet", "Doesn't eat meat", "Eats meat",
        "went {DIET} in January", "I'm eating meat again", "gave up being {DIET}",
        "the {DIET} thing lasted a month", "first steak in five years", "cut out dairy",
        "no more meat for me", "plant-based since the documentary", "soy vegetariana",
        "back on fish, the vegan thing didn't work", "ich esse kein Fleisch mehr",
        "started keto", "fine with eating meat now as long as it's local",
    ],
    "food": [
        "Loves {FOOD}", "Hates {FOOD}", "Can't stand {FOOD}", "Favourite food is {FOOD}",
        "I actually like {FOOD} now", "{FOOD} is disgusting", "craving {FOOD} again",
        "finally tried {FOOD} and loved it", "went off {FOOD} completely", "Dislikes {FOOD}",
        "can't get enough {FOOD}", "me encanta el {FOOD}", "Allergic to {FOOD}",
        "Snacks on {FOOD}", "breakfast is always {FOOD}", "obsessed with {FOOD} lately",
    ],
    "drink": [
        "Drinks {DRINK} every morning", "Coffee order: {DRINK}", "Prefers {DRINK}",
        "switched from coffee to {DRINK}", "quit caffeine", "off coffee for a month now",
        "gave up alcohol", "sober for 100 days", "a glass of {DRINK} with dinner",
        "ordering {DRINK} these days", "no more {DRINK} for me", "trinke nur noch {DRINK}",
        "Doesn't drink alcohol", "hooked on {DRINK}", "dry January turned into dry year",
    ],
    "habit": [
        "Smokes", "Quit smoking", "Is a smoker", "smoke-free for a year", "started vaping",
        "back on the cigarettes, don't judge", "Runs {AMOUNT} every morning",
        "Goes to the gym {DAYS}", "stopped going to the gym", "swapped the morning runs for swimming",
        "Does the crossword every morning", "Meditates daily", "haven't journaled in months",
        "Is an early riser", "night owl these days", "Bites her nails", "Goes to bed at ten",
        "Is always late", "Is always on time", "gave up the daily walks", "dejé de fumar",
    ],
    "sport": [
        "Plays {SPORT}", "Does {SPORT} {DAYS}", "Loves {SPORT}", "Is into {SPORT}",
        "signed up for {SPORT} classes", "gave up {SPORT}", "finished my first {SPORT} race",
        "hurt my knee, no {SPORT} for a while", "my {SPORT} coach says I'm improving",
        "Trains for marathons", "ran my first marathon!", "Can't swim",
        "finished an open-water race", "joined a {SPORT} club", "spiele jetzt {SPORT}",
    ],
    "hobby": [
        "Enjoys {HOBBY}", "Takes a {HOBBY} class on {DAYS}", "Does {HOBBY}", "Is into {HOBBY}",
        "quit {HOBBY}", "dropped the {HOBBY} class", "new obsession: {HOBBY}",
        "my {HOBBY} teacher retired so that's over", "cancelled my WoW sub",
        "Plays video games most evenings", "sold my {HOBBY} gear", "picked up {HOBBY}",
        "Plays World of Warcraft", "Collects vinyl", "the {HOBBY} group disbanded",
    ],
    "media": [
        "Likes {MUSIC}", "Listens to {MUSIC}", "Favourite band is Radiohead", "Hates {MUSIC}",
        "on a massive {MUSIC} kick", "can't listen to {MUSIC} anymore", "Watches {SHOW}",
        "binged {SHOW} this weekend", "Reads {GENRE}", "only reading {GENRE} these days",
        "Loves Studio Ghibli films", "got bored of {SHOW}", "Favourite genre: {GENRE}",
    ],
    "device": [
        "Uses an {DEVICE}", "Has a {DEVICE}", "Phone: {DEVICE}", "traded my Android for an iPhone",
        "finally switched to {DEVICE}", "my new {DEVICE} arrived", "gave my {DEVICE} to my mum",
        "back on {DEVICE} after the screen died", "Works on a {DEVICE}", "the {DEVICE} battery is dead",
        "Uses Linux", "moved from Windows to Mac", "ganti HP ke {DEVICE}",
    ],
    "car": [
        "Drives {CAR}", "Owns {CAR}", "Car: {CAR}", "sold the car", "bought {CAR}",
        "picked up {CAR} this weekend", "the new car smell!", "written off the car in a crash",
        "no car anymore, just the bus", "Doesn't own a car", "leasing {CAR} now",
        "my {CAR} failed its MOT so it's gone", "verkaufte mein Auto", "vendí el coche",
    ],
    "ability": [
        "Can {SKILL}", "Is fluent in {SKILL}", "Knows {SKILL}", "Is learning {SKILL}",
        "Is good at {SKILL}", "Is a beginner at {SKILL}", "Can't play {SKILL}",
        "finally learned {SKILL}", "I can play {SKILL} now", "forgot all my {SKILL}",
        "level 3 in {SKILL} now", "self-taught in {SKILL}", "Can solve a Rubik's cube",
        "Is left-handed", "Can't drive", "passed my driving test!", "got my licence",
        "Can't cook", "cooking every night now, who am I", "learned to juggle five balls",
    ],
    "language": [
        "Speaks {LANG}", "Is learning {LANG}", "Is fluent in {LANG}", "Speaks a little {LANG}",
        "passed my {LANG} B2 exam", "gave up on {LANG}", "my {LANG} is rusty now",
        "dreamt in {LANG} last night", "started {LANG} lessons", "native {LANG} speaker",
        "hablo {LANG}", "lerne {LANG}", "belajar bahasa {LANG}",
    ],
    "certification": [
        "Holds the {CERT} certification", "Is working toward {CERT}", "Has {N} {CERT} certs",
        "passed {CERT}!", "{CERT} exam done", "failed {CERT} again", "my {CERT} expired",
        "third {CERT} cert done", "studying for {CERT}", "Is a certified {CERT}",
        "got my {CERT} badge", "renewed my {CERT}",
    ],
    "study": [
        "Is studying for {DEGREE}", "Is a student at {UNI}", "Is doing {DEGREE}",
        "defended my thesis!", "graduated!", "dropped out of {DEGREE}", "finished {DEGREE}",
        "first lecture at {UNI}", "accepted into {UNI}", "Has {DEGREE}", "Studies at {UNI}",
        "exam season at {UNI}", "quit {DEGREE} halfway", "Dr. me, finally", "estudio en {UNI}",
        "submitted the dissertation", "back at uni for {DEGREE}",
    ],
    "religion": [
        "Is {RELIG}", "Is a practising {RELIG}", "Goes to church every Sunday", "Is religious",
        "I left the church", "converted to Islam", "became {RELIG}", "no longer religious",
        "stopped going to mass", "found my faith again", "Is not religious",
        "fasting for Ramadan", "my first Passover seder", "Observes the Sabbath",
    ],
    "politics": [
        "Votes {PARTY}", "Supports {PARTY}", "Is {PARTY}", "Is a member of {PARTY}",
        "voted {PARTY} for the first time", "cancelled my {PARTY} membership",
        "done with {PARTY}", "canvassing for {PARTY}", "Is politically {PARTY}",
        "switched my vote to {PARTY}",
    ],
    "opinion": [
        "Thinks {TOPIC} should be banned", "Believes {TOPIC} is good", "Is against {TOPIC}",
        "Is a fan of {TOPIC}", "changed my mind on {TOPIC}", "honestly {TOPIC} is fine now",
        "came around on {TOPIC}", "{TOPIC} is a scam", "I used to hate {TOPIC}, not anymore",
        "Believes eating meat is wrong", "Thinks homework is pointless",
        "Is sceptical of {TOPIC}", "strongly supports {TOPIC}", "my view on {TOPIC} flipped",
    ],
    "health": [
        "Has {ILL}", "Suffers from {ILL}", "Is allergic to peanuts", "Diagnosed with {ILL}",
        "my {ILL} is gone", "the {ILL} came back", "cured of {ILL}",
        "off the inhaler since the move", "the surgery fixed my {ILL}", "in remission!",
        "sleeping fine since the new meds", "Wears glasses", "got laser eye surgery, no more glasses",
        "switched to contact lenses", "broke my leg skiing", "Blood type is O+",
        "Is 180 cm tall", "shoe size 42", "pregnant!", "grew an inch, somehow",
    ],
    "family": [
        "Has a {REL} named {NAME}", "Her {REL} lives in {CITY}", "Is close to their {REL}",
        "my {REL} passed away", "we lost grandma in March", "my {REL} moved in with us",
        "became an aunt!", "my {REL} got married", "not speaking to my {REL} anymore",
        "Father is a retired teacher", "my dad retired", "my {REL} is visiting for a week",
    ],
    "travel": [
        "Is planning a trip to {CITY}", "Wants to visit {CITY}", "Travels a lot for work",
        "back from {CITY}!", "the {CITY} trip is cancelled", "booked flights to {CITY}",
        "in {CITY} for the weekend", "visiting {CITY} for a conference",
        "holiday in {CITY} next month", "passport expired", "renewed my passport",
    ],
    "schedule": [
        "Works nights", "Works from home on Fridays", "Starts work at 7", "Has Tuesdays off",
        "on the night shift now", "four-day week from now on", "back to office full time",
        "my hours changed to evenings", "Works weekends", "the new rota has me on mornings",
    ],
    "other": [
        "what a day", "lol that meme", "it's raining again", "anyone seen my keys",
        "the match last night was wild", "traffic is terrible today", "ordered pizza for the team",
        "{NAME} got laid off, poor guy", "{NAME} moved to {CITY}", "my {REL} bought {CAR}",
        "{NAME} is vegan now", "my {REL} quit smoking", "might move to {CITY} someday",
        "thinking about learning {LANG}", "should I get a {ANIMAL}?", "do you like {FOOD}?",
        "the news is depressing", "happy birthday to me", "watched a documentary on whales",
        "coffee machine at the office broke", "weekend plans: nothing", "Monday again",
        "{NAME}'s wedding was lovely", "my {REL} is visiting {CITY}", "a weird dream last night",
        "that restaurant closed down", "the printer is jammed again", "good morning everyone",
        "Tom's new job sounds fun", "reading the news", "my neighbour's dog barks all night",
    ],
}


# More templates per slot: implicit, casual and side-effect phrasings.
MORE: dict[str, list[str]] = {
    "employer": [
        "the {CO} interview loop was five rounds but I'm in", "{CO} swag arrived before my start date",
        "my {CO} laptop won't connect to the VPN", "all-hands at {CO} was chaos",
        "my team at {CO} ships on Fridays, brave", "{CO} pays way better than my last place",
        "leaving drinks for me at {CO} tonight", "the {CO} canteen is honestly great",
        "I report to the CTO at {CO} now", "contract with {CO} ends in March",
        "working for {CO} means lots of travel", "got my {CO} email set up", "my colleagues at {CO}",
        "Employer: {CO}", "Company: {CO}", "The user is employed at {CO} as a {ROLE}",
        "after the acquisition we're all {CO} employees now", "clocked in at {CO} for the last time",
        "{CO} HR sent the welcome pack", "back at {CO} after two years away",
        "our {CO} standup runs long every day", "I'm the newest hire at {CO}",
    ],
    "job_title": [
        "my business cards say {ROLE} now", "leading the team as {ROLE}", "Role: {ROLE}",
        "Position: {ROLE} at a small firm", "my first review as {ROLE} went well",
        "from intern to {ROLE} in two years", "the {ROLE} job is way more meetings",
        "now managing three people", "I manage the whole department now", "moved into management",
        "back to being an individual contributor", "went from junior to senior this spring",
    ],
    "employment_status": [
        "my redundancy package came through", "signing on for benefits", "my severance runs out soon",
        "took early retirement", "the whole team was cut in the layoffs", "on garden leave",
        "my contract wasn't renewed", "the company went bust and I'm out", "freelancing full time now",
        "Works full-time", "Is currently employed", "has been out of work since spring",
        "applications, rejections, repeat", "invoicing my first clients as a freelancer",
    ],
    "city": [
        "the {CITY} winters are brutal", "everyone in {CITY} cycles", "learning the bus routes in {CITY}",
        "my {CITY} flat is tiny but the rent is fine", "moved back home to {CITY}",
        "new city, new me: hello {CITY}", "the move to {CITY} is done", "living in {CITY} now",
        "City: {CITY}", "Location: {CITY}", "Based in {CITY}, originally from {CITY}",
        "swapped the city for the countryside", "the hills in {CITY} destroy my calves",
        "first time voting in {CITY}", "my new GP in {CITY} is lovely", "finally unpacked in {CITY}",
        "the tube vs the trams here in {CITY}", "my local cafe in {CITY} knows my order",
        "domiciliado en {CITY}", "lebe jetzt in {CITY}", "rumah baru di {CITY}",
    ],
    "home": [
        "the new flat is on the fourth floor, no lift", "our landlord finally fixed the boiler",
        "mortgage approved!", "house hunting is exhausting", "we downsized to a flat",
        "living with my girlfriend now", "back with my parents to save money",
        "the postman never finds our new building", "moved across town to {AREA}",
        "Home address: {STREET}", "Lives in a house with a garden", "rents a flat with {NAME}",
        "the studio is too small, we're moving", "our new place has a garden",
    ],
    "commute": [
        "my train to work got cancelled again", "driving in to the office every day now",
        "the bike commute takes 25 minutes door to door", "the ferry to work is the best part",
        "Commutes two hours a day", "walking to the office since we moved closer",
        "the bus to work is packed", "I carpool with {NAME}", "the commute from {AREA} is killing me",
    ],
    "phone": [
        "Phone: {PHONE}", "ring me on {PHONE}", "my number changed, new one is {PHONE}",
        "ditched the old SIM", "whatsapp me on {PHONE}", "number ported to a new network",
        "landline: {PHONE}", "the old number is disconnected",
    ],
    "email": [
        "Email: {EMAIL}", "Work email: {EMAIL}", "my inbox moved to {EMAIL}",
        "stopped using hotmail, it's {EMAIL} now", "the old address bounces now",
        "forwarding everything to {EMAIL}", "contact: {EMAIL}",
    ],
    "handle": [
        "my Instagram is private now", "rebranded my account to {HANDLE}",
        "Twitter: {HANDLE}", "left Twitter", "off social media entirely", "Mastodon: {HANDLE}",
        "my Discord is {HANDLE}", "Snapchat: {HANDLE}",
    ],
    "relationship_status": [
        "dating app fatigue is real", "moving out of our shared flat after the breakup",
        "the divorce papers are signed", "we're taking a break", "honeymoon in Bali was perfect",
        "Relationship status: single", "Is in a long-term relationship", "Is widowed",
        "my wife and I", "my husband and I", "my ex and I are still friends",
        "newly single and loving it", "getting hitched next month", "wedding rings picked!",
    ],
    "partner": [
        "Wife: {NAME}", "Husband: {NAME}", "Fiancée: {NAME}", "Is dating {NAME}",
        "{NAME} and I moved in together", "{NAME} left me", "my partner {NAME} cooks",
        "my girlfriend {NAME} says hi", "{NAME}'s my boyfriend now", "seeing {NAME} tonight, third date",
    ],
    "children": [
        "Kids: {N}", "Has a son named {NAME}", "Has {N} children", "{NAME} just turned 6",
        "parents' evening for {NAME}", "the kids are at their gran's", "baby number two on the way",
        "we're a family of five now", "nappies everywhere", "the kids start at a new school",
        "our eldest left for uni", "no kids, just plants", "Is child-free by choice",
    ],
    "pets": [
        "Pet: {ANIMAL} called {PET}", "Has a {ANIMAL}", "{PET} chewed my shoes again",
        "the house is so quiet without {PET}", "RIP {PET}", "{PET} crossed the rainbow bridge",
        "brought home a rescue {ANIMAL}", "two dogs became three", "{PET} and {PET} are best friends",
        "pet food for {N} cats is expensive", "we said goodbye to {PET} today", "dog walker for {PET}",
    ],
    "diet": [
        "Diet: {DIET}", "Eats a {DIET} diet", "ordered a burger, my first in years",
        "meat-free Mondays became meat-free forever", "bacon won, I'm off the vegan thing",
        "no animal products since January", "Eats fish but not meat", "eating everything again",
    ],
    "food": [
        "Favourite cuisine: {FOOD}", "Food dislike: {FOOD}", "Can't eat {FOOD}",
        "{FOOD} three times this week, oops", "I've come around on {FOOD}", "never eating {FOOD} again",
        "Loves spicy food", "turns out I love {FOOD} now", "my go-to snack is {FOOD}",
    ],
    "drink": [
        "Drinks {DRINK}", "oat milk in everything now", "only decaf since the palpitations",
        "the espresso machine is my best friend", "teetotal these days", "back on the coffee",
        "replaced my morning coffee with {DRINK}", "cut down to one coffee a day",
        "haven't had a drink since new year", "wine o'clock", "Drinks tea, never coffee",
    ],
    "habit": [
        "Smokes a pack a day", "day 30 without a cigarette", "the patches are working",
        "bought nicotine gum", "Wakes up at 5am", "sleeping in till ten these days",
        "Walks 10k steps a day", "stopped biting my nails", "Is never late", "late again, as usual",
        "Journals every night", "back to journaling", "Runs every morning", "haven't run in weeks",
    ],
    "sport": [
        "my {SPORT} league starts Sunday", "new {SPORT} shoes", "signed up for a 10k",
        "Plays {SPORT} on {DAYS}", "Swims at the local pool", "learned to swim at 30!",
        "my PB at parkrun", "the {SPORT} club kicked me out", "done with {SPORT}, my knees",
        "Goes to spin class", "cancelled my gym membership", "joined a climbing gym",
    ],
    "hobby": [
        "Hobby: {HOBBY}", "my {HOBBY} stuff is all over the table", "sold my guitar",
        "haven't touched my {HOBBY} in months", "weekend {HOBBY} workshop", "Sings in a choir",
        "left the choir", "my sourdough starter died", "finally finished the quilt",
        "Plays board games with friends", "uninstalled all my games", "bought a kiln!",
    ],
    "media": [
        "Music: {MUSIC}", "Favourite show: {SHOW}", "Favourite book genre: {GENRE}",
        "cancelled Netflix", "only podcasts these days", "my Spotify wrapped was all {MUSIC}",
        "went to a {MUSIC} gig", "can't stand {SHOW} anymore", "reading {GENRE} again",
    ],
    "device": [
        "Phone OS: iOS", "Uses Android", "Laptop: {DEVICE}", "my new phone is a {DEVICE}",
        "green bubbles no more", "moved all my photos to the new {DEVICE}", "sold my {DEVICE}",
        "broke my {DEVICE}, using an old one", "typing this on my new {DEVICE}", "Uses Windows",
    ],
    "car": [
        "Vehicle: {CAR}", "the Honda is gone, we're a one-car family", "insurance for the new car",
        "electric now, bye petrol", "traded the car in", "Has no car", "got my first car!",
        "Rides a motorbike", "sold the motorbike", "my car got stolen",
    ],
    "ability": [
        "Skill: {SKILL}", "Can play {SKILL}", "Is an expert in {SKILL}", "can't swim",
        "Can't ride a bike", "rode a bike for the first time", "my {SKILL} is rusty",
        "learned to drive at last", "Is colour blind", "Can touch type", "typing 90 wpm now",
        "Plays chess at club level", "finally beat my dad at chess", "Is a strong swimmer",
        "Can juggle three balls", "Is right-handed", "Cooks well", "burnt water again lol",
    ],
    "language": [
        "Languages: {LANG}", "Speaks {LANG} at home", "my {LANG} teacher says I'm B1 now",
        "Duolingo streak for {LANG}: 300 days", "forgot all my school {LANG}", "finally fluent in {LANG}",
        "ordering food in {LANG} without panicking", "dropped {LANG} classes",
    ],
    "certification": [
        "Certifications: {CERT}", "Qualified as a {CERT}", "Has a driving licence",
        "lost my licence for speeding", "my {CERT} renewal is due", "passed the bar exam",
        "certified at last: {CERT}", "Licensed to practise", "Working toward {CERT} certification",
    ],
    "study": [
        "Education: {DEGREE}", "Is in the second year of {DEGREE}", "graduation day!",
        "thesis submitted, viva next", "officially a doctor", "quit uni to work",
        "enrolled in {DEGREE} at {UNI}", "my last exam ever", "back to school at 40",
        "Studying part-time", "withdrew from the course", "handed in my final project",
    ],
    "religion": [
        "Religion: {RELIG}", "Is a devout {RELIG}", "baptised last Sunday", "stopped praying",
        "lost my faith", "went to the mosque for Eid", "Attends temple", "we got married in church",
        "I'm not religious anymore", "rejoined the church choir",
    ],
    "politics": [
        "Politics: {PARTY}", "Is a {PARTY} voter", "Is apolitical", "joined {PARTY}",
        "voted for {PARTY} this time", "left {PARTY} over the war", "campaigning for {PARTY}",
    ],
    "opinion": [
        "Opinion on {TOPIC}: against", "Loves {TOPIC}", "Thinks {TOPIC} is overrated",
        "actually, {TOPIC} makes sense", "I was wrong about {TOPIC}", "converted to {TOPIC}",
        "{TOPIC} is the future", "still think {TOPIC} is a waste", "Believes in ghosts",
        "Doesn't believe in astrology", "now I think {TOPIC} is fine", "fully against {TOPIC} now",
    ],
    "health": [
        "Health: {ILL}", "Allergy: {ILL}", "Has hay fever", "no sneezing this spring at all",
        "the allergy tests came back clear", "my migraines stopped", "Is diabetic",
        "off my meds since March", "Wears contact lenses", "the knee surgery went well",
        "Height: 170 cm", "Shoe size: 40", "Is short-sighted", "sleeping through the night now",
        "Has insomnia", "Is pregnant", "got braces", "Is vaccinated",
    ],
    "family": [
        "Sister: {NAME}", "Father: retired teacher", "Has {N} siblings", "Mother lives in {CITY}",
        "my {REL} and I made up", "my {REL} moved abroad", "my {REL} had a baby", "only child",
        "my {REL} died last year", "the funeral was on Friday", "became an uncle",
    ],
    "travel": [
        "Travel plan: {CITY} in spring", "the trip got cancelled", "just landed in {CITY}",
        "postponed the {CITY} trip", "Dreams of visiting {CITY}", "backpacking through {CITY}",
    ],
    "schedule": [
        "Schedule: nights", "Works Monday to Friday", "my days off changed to Wednesdays",
        "Is on call every other week", "switched to early shifts", "Works four days a week",
    ],
    "other": [
        "ugh, mondays", "the cat video you sent is hilarious", "so tired today", "anyone up?",
        "lunch was good", "ok", "thanks for the help!", "can't believe it's December already",
        "my {REL} got a new job at {CO}", "{NAME} and {NAME} broke up", "{NAME}'s dog died",
        "{NAME} moved in with her boyfriend", "my colleague quit today", "my boss is on holiday",
        "would love to visit {CITY} one day", "maybe I'll learn {SKILL} next year",
        "what's the best {DEVICE}?", "should we get a {ANIMAL}", "is {FOOD} healthy?",
        "had a dream I worked at {CO}", "watched a film about {CITY}", "my {REL} is {DIET}",
        "the {CITY} football team lost again", "reading about {TOPIC}", "{NAME} turned 40",
        "our neighbours got a {ANIMAL}", "{NAME} speaks {LANG}", "my {REL} passed the {CERT} exam",
    ],
}
for _k, _v in MORE.items():
    T.setdefault(_k, []).extend(_v)

BASE_T = {k: list(v) for k, v in T.items()}
BASE_FILL = {k: list(v) for k, v in FILL.items()}
casual_variant = None   # set by use_casual: wraps a sentence in a chat opener and tail


def use_casual(on: bool = True, generated: bool = False, pairs: bool = False, natural: bool = False) -> None:
    """Add (or, ``on=False``, leave out) the casual block of tools/casual_corpus.py: implicit
    phrasings per slot, a large "no slot" class and chat wrappers for every class; with
    ``generated`` also the generated block of tools/generated_corpus.py (predicates and noun
    phrases per slot crossed with shared frames); with ``pairs`` the texts of
    tools/pair_corpus.jsonl's labelled pairs (``pair_corpus.sentences_by_topic``); with ``natural`` the
    sentences of tools/topic_corpus.jsonl (each its own template). T and FILL are changed in
    place (train_detector reads them at fit time)."""
    import casual_corpus
    global casual_variant
    T.clear()
    FILL.clear()
    for k, v in BASE_T.items():
        T[k] = list(v)
    for k, v in BASE_FILL.items():
        FILL[k] = list(v)
    casual_variant = None
    if on:
        for k, v in casual_corpus.T_MORE.items():
            T.setdefault(k, []).extend(t for t in v if t not in T[k])
        for k, v in casual_corpus.FILL_MORE.items():
            FILL[k].extend(x for x in v if x not in FILL[k])
        for k, v in casual_corpus.FILL_NEW.items():
            FILL[k] = list(v)
        casual_variant = casual_corpus.casual_variant
    if generated:
        import generated_corpus
        for k, v in generated_corpus.templates().items():
            T.setdefault(k, []).extend(t for t in v if t not in T[k])
    if pairs:
        import pair_corpus
        for k, v in pair_corpus.sentences_by_topic().items():
            T.setdefault(k, []).extend(t for t in v if t not in T[k])
    if natural:
        import topic_corpus
        for k, v in topic_corpus.sentences_by_topic().items():
            T.setdefault(k, []).extend(t for t in v if t not in T[k])


use_casual(True)


def sentences(seed: int = 7, per_template: int = 4) -> list[tuple[str, str]]:
    """Every template filled ``per_template`` times (distinct fills), as ``(text, slot)``."""
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    for slot, temps in T.items():
        for t in temps:
            seen = set()
            for _ in range(per_template * 3):
                s = t
                for k, vals in FILL.items():
                    while "{" + k + "}" in s:
                        s = s.replace("{" + k + "}", rng.choice(vals), 1)
                if s in seen:
                    continue
                seen.add(s)
                out.append((s, slot))
                if len(seen) >= per_template:
                    break
    return out


if __name__ == "__main__":
    rows = sentences()
    print(len(rows), "sentences,", sum(len(v) for v in T.values()), "templates,", len(T), "slots")

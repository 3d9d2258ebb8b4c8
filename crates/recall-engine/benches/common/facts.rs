//! The kinds of facts a conversation plants, one question each, in six categories:
//!
//! - `Keyword`: the question repeats the fact's distinctive words;
//! - `Paraphrase`: the question shares no content word with the evidence or its reply (checked
//!   by `convo::check`): only meaning connects them;
//! - `Multi`: the answer needs two statements made in different sessions;
//! - `Updated`: the fact changes later; the question asks for the latest value, whose statement
//!   is the evidence (the first one, which still matches the question, is not);
//! - `Time`: the question names the date of the session the fact was mentioned in (or asks
//!   for it: then the session's dated greeting is evidence too); the same kind of thing is
//!   mentioned on other dates;
//! - `Distractor`: the question's words are common in the conversation (coffee, meetings,
//!   bread), so many turns match them and one holds the answer.
//!
//! Every kind also brings distractor exchanges: the fact's words in other sessions, in a way
//! that does not answer the question.

use super::deck::Deck;
use super::linked;
use super::plan::*;

/// A kind of fact: draws its values and writes its plan.
pub type Kind = fn(&mut Deck) -> Plan;

/// Every kind, planted once in each conversation.
pub const KINDS: &[(&str, Kind)] = &[
    ("sister-city", sister_city),
    ("car", car),
    ("allergy", allergy),
    ("new-job", new_job),
    ("race-time", race_time),
    ("book-club", book_club),
    ("teacher", teacher),
    ("board-game", board_game),
    ("dog", dog),
    ("nervous", nervous),
    ("diet", diet),
    ("partner-job", partner_job),
    ("instrument", instrument),
    ("commute", commute),
    ("cats", linked::cats),
    ("trip", linked::trip),
    ("concert-cost", linked::concert_cost),
    ("gifts", linked::gifts),
    ("dentist", linked::dentist),
    ("move-city", linked::move_city),
    ("rent", linked::rent),
    ("race-goal", linked::race_goal),
    ("film-date", linked::film_date),
    ("lunch-date", linked::lunch_date),
    ("pottery-start", linked::pottery_start),
    ("starter-name", linked::starter_name),
    ("coffee", linked::coffee),
    ("standup-room", linked::standup_room),
];

fn sister_city(d: &mut Deck) -> Plan {
    let sis = d.draw(WOMEN);
    let city = d.draw(CITIES);
    let month = d.draw(MONTHS);
    let employer = d.any(&[
        "an architecture firm",
        "the university",
        "a biotech start-up",
    ]);
    plan(
        Category::Keyword,
        vec![early(
            format!("Big family news: my sister {sis} is moving to {city} in {month}! She got a job at {employer} there. I'm happy for her but I'll miss having her around the corner."),
            format!("That's big news, congratulations to {sis}! A new job and a new city at once is a lot, but it sounds like a great opportunity. You'll have a good excuse to visit {city}, and video calls make the distance easier than it used to be."),
        )],
        format!("Which city is my sister {sis} moving to?"),
        city.into(),
    )
    .with(
        format!("It's {sis}'s birthday soon and I have no gift idea. She likes hiking and old jazz records. Any ideas under 50 euros?"),
        "A few ideas: a good second-hand jazz record from a local shop, a compact trail guide for a region she wants to explore, or a pair of merino hiking socks with a handwritten note. Personal beats expensive.".into(),
    )
    .with(
        format!("I keep seeing travel articles about {city}. Is it overrated?"),
        format!("{city} gets a lot of attention lately, and parts of the centre are crowded in summer, but the neighbourhoods a little further out are still relaxed. Going in spring or autumn helps a lot."),
    )
}

fn car(d: &mut Deck) -> Plan {
    let colour = d.any(&["silver", "dark blue", "red", "white"]);
    let model = d.any(&[
        "Skoda Octavia estate",
        "Toyota Yaris hybrid",
        "Volkswagen Golf",
        "Mazda 3",
        "Kia Niro",
    ]);
    let km = d.any(&["48,000", "61,500", "32,800", "75,200"]);
    plan(
        Category::Keyword,
        vec![early(
            format!("I finally bought a car! A used {colour} {model}, only {km} km on it. Picked it up from the dealer this morning."),
            format!("Congratulations on the car! A {model} with {km} km is a sensible buy. Book the first service soon so you know where it stands, and check when the tyres were last replaced."),
        )],
        "What car did I buy?".into(),
        format!("a used {colour} {model}"),
    )
    .with(
        "The car park at work is closing for repairs for two weeks. Any tips for finding parking in the city centre?".into(),
        "Look for park-and-ride sites at the edge of the centre, which are usually cheaper, or an app that lets you reserve a private driveway. Arriving before 8 also makes a big difference.".into(),
    )
    .with(
        "My neighbour asked whether I'd buy an electric car next time. What should I think about?".into(),
        "Mainly where you would charge it: a home charger makes an electric car easy, relying on public chargers is harder. Then range for your longest regular trip, insurance and resale value.".into(),
    )
}

fn allergy(d: &mut Deck) -> Plan {
    let allergen = d.any(&["sesame", "shellfish", "hazelnuts", "celery"]);
    plan(
        Category::Keyword,
        vec![early(
            format!("Quick note for any recipe ideas: I'm allergic to {allergen}, so please never suggest anything with it."),
            format!("Noted: no {allergen} in anything I suggest. I'll also point out dishes where it tends to hide, like sauces and dressings."),
        )],
        "What am I allergic to?".into(),
        allergen.into(),
    )
    .with(
        "Is hay fever the same thing as being allergic to pollen?".into(),
        "Essentially yes: hay fever is an allergic reaction to pollen, from grasses, trees or weeds depending on the season. Antihistamines and keeping windows closed on high-pollen days help.".into(),
    )
    .with(
        "A colleague is allergic to cats and is coming to dinner. Should I do anything?".into(),
        "Vacuum and wipe surfaces the day before, keep the cat out of the dining room, and let your colleague know so they can take an antihistamine beforehand if they want.".into(),
    )
}

fn new_job(d: &mut Deck) -> Plan {
    let company = d.any(&[
        "Northwind Analytics",
        "Brightlane Energy",
        "Halcyon Health",
        "Quillstone Games",
        "Tidewater Logistics",
    ]);
    let role = d.any(&[
        "data analyst",
        "product designer",
        "backend developer",
        "project manager",
    ]);
    plan(
        Category::Keyword,
        vec![early(
            format!("First day at the new job went well! I'm a {role} at {company} now, on a small team of six."),
            format!("Great to hear the first day went well! A team of six at {company} means you'll get to know everyone quickly. Take notes on names and who owns what during the first weeks."),
        )],
        "What's the name of the company where I started my new job?".into(),
        company.into(),
    )
    .with(
        "My old job had so many pointless meetings. How do I avoid that pattern in a new job?".into(),
        "Ask for an agenda before accepting a meeting, suggest written updates for status topics, and block focus time in your calendar early, before it fills up.".into(),
    )
    .with(
        "A friend asked me how to prepare for a job interview at a start-up. What would you tell her?".into(),
        "Research what the company ships and who its customers are, prepare two or three stories about problems she solved, and have questions ready about runway and how decisions are made.".into(),
    )
}

fn race_time(d: &mut Deck) -> Plan {
    let race = d.any(&["Riverside 10K", "Harbour 10K", "Parkland 10K"]);
    let time = d.any(&["48:12", "51:37", "46:55", "53:04"]);
    plan(
        Category::Keyword,
        vec![early(
            format!("Ran the {race} yesterday and finished in {time}, a new personal best! Legs are sore today."),
            format!("Congratulations on the personal best at the {race}! {time} is a strong time. Take an easy day or two, walk a little and stretch gently."),
        )],
        format!("What was my finishing time in the {race}?"),
        time.into(),
    )
    .with(
        "How do I pace a 10K race better? I always start too fast.".into(),
        "Run the first two kilometres slightly slower than goal pace, then settle in. A watch with a pace alert helps, and so does a practice run at goal pace a week before the race.".into(),
    )
    .with(
        "What's a decent time for a 10K for a beginner?".into(),
        "Anything between 55 and 70 minutes is common for a first 10K. The first race is about finishing comfortably; the time drops quickly with regular training.".into(),
    )
}

fn book_club(d: &mut Deck) -> Plan {
    let (book, author) = *d.rng.pick(&[
        ("The Remains of the Day", "Kazuo Ishiguro"),
        ("Piranesi", "Susanna Clarke"),
        ("A Gentleman in Moscow", "Amor Towles"),
        ("The Overstory", "Richard Powers"),
        ("Klara and the Sun", "Kazuo Ishiguro"),
    ]);
    plan(
        Category::Keyword,
        vec![early(
            format!("Our book club picked {book} by {author} for next month. I've never read anything by {author}."),
            format!("{book} is a good pick for a book club, there's a lot to discuss. Reading a few pages each evening gets you through it comfortably in a month."),
        )],
        "Which book did my book club choose?".into(),
        format!("{book} by {author}"),
    )
    .with(
        "How do I keep a book club discussion from going off topic?".into(),
        "Have one person bring three or four open questions, start with first impressions in a round, and keep the catching-up chat for after the discussion.".into(),
    )
    .with(
        "Can you recommend a short book I could finish on a weekend?".into(),
        "Try a novella: Of Mice and Men, The Old Man and the Sea or Convenience Store Woman are all short and rewarding.".into(),
    )
}

fn teacher(d: &mut Deck) -> Plan {
    let kid = d.draw(MEN);
    let surname = d.draw(SURNAMES);
    plan(
        Category::Keyword,
        vec![early(
            format!("{kid}'s teacher this year is Ms {surname}. We met her at the school open evening and she seems lovely."),
            format!("That's a good start to the year. Having met Ms {surname} early makes it easier to raise anything later, and {kid} will notice that you get along."),
        )],
        format!("What is the name of {kid}'s teacher?"),
        format!("Ms {surname}"),
    )
    .with(
        format!("{kid} has a school project on volcanoes. Any simple experiment we could do at home?"),
        "The classic baking soda and vinegar volcano works well: build a cone around a bottle, add baking soda and a drop of washing-up liquid, then pour in vinegar with red food colouring.".into(),
    )
    .with(
        "What should I ask at a parent-teacher meeting?".into(),
        "Ask how your child gets on with classmates, where they struggle and where they shine, and what you can do at home to support what happens in class.".into(),
    )
}

fn board_game(d: &mut Deck) -> Plan {
    let game = d.any(&[
        "Patchwork",
        "Jaipur",
        "7 Wonders Duel",
        "Lost Cities",
        "Hive",
    ]);
    let mut p = plan(
        Category::Keyword,
        vec![early(
            format!("{} and I want a board game for the two of us, something we can finish in half an hour. Any suggestion?", d.draw(WOMEN)),
            format!("I'd suggest {game}: it plays in about thirty minutes, is easy to teach and stays interesting after many games. It's one of the best board games designed for two players."),
        )],
        "Which board game did you suggest for the two of us?".into(),
        game.into(),
    );
    p.plants[0].evidence = Side::Assistant;
    p.with(
        "What's a good board game for a family with young kids?".into(),
        "Outfoxed, Dragomino and Rhino Hero are simple to learn and fun for young kids and adults alike.".into(),
    )
}

fn dog(d: &mut Deck) -> Plan {
    let name = d.draw(&[
        "Biscuit", "Pepper", "Waffles", "Juniper", "Bramble", "Pickle",
    ]);
    let breed = d.any(&["beagle", "border collie", "labrador", "spaniel"]);
    plan(
        Category::Paraphrase,
        vec![early(
            format!("We adopted a {breed} puppy from the shelter on Saturday! The kids named him {name}. He chewed a slipper within an hour."),
            format!("Welcome home, {name}! Young {breed}s have endless energy, so plenty of short walks and chew toys will save your slippers. Puppy classes are great for early training too."),
        )],
        "What is my dog called?".into(),
        name.into(),
    )
    .with(
        "My neighbour's dog barks all night. How do I bring it up politely?".into(),
        "Choose a calm moment, mention the specific nights and times, and assume they may not know. Suggesting something concrete, like bringing the dog inside after ten, makes it easier to agree.".into(),
    )
    .with(
        "What do people call a group of dogs, by the way?".into(),
        "A group of dogs is usually called a pack; for hunting dogs you sometimes see older terms like a kennel or a cry of hounds.".into(),
    )
}

fn nervous(d: &mut Deck) -> Plan {
    let seat = d.any(&["an aisle seat", "a seat over the wing"]);
    plan(
        Category::Paraphrase,
        vec![early(
            format!("Flying is honestly terrifying for me. I grip the armrest during takeoff, always book {seat}, and count the minutes until landing."),
            "That sounds exhausting, and it's very common. Slow breathing (in for four, out for six) during takeoff helps many people, and so does knowing that turbulence is uncomfortable but not dangerous.".into(),
        )],
        "Is there something that makes me anxious when I travel?".into(),
        "flying".into(),
    )
    .with(
        "I get nervous before presentations at work. Any tricks?".into(),
        "Rehearse the first minute until it's automatic; the nerves fade once you're past the opening. Slow breathing and arriving early to check the room help too.".into(),
    )
    .with(
        "What's the best way to get from the airport to the city centre when I travel?".into(),
        "Usually the train or express bus: predictable and cheaper than a taxi. Check the timetable for late arrivals, since some lines stop around midnight.".into(),
    )
}

fn diet(d: &mut Deck) -> Plan {
    let weeks = d.any(&["three", "five", "six"]);
    plan(
        Category::Paraphrase,
        vec![early(
            format!("I stopped eating meat, fish, eggs and dairy {weeks} weeks ago. Fully plant-based now and feeling great."),
            format!("Nice, {weeks} weeks in is when it starts to feel routine. Keep an eye on vitamin B12 and iron, and lentils, tofu and beans will cover your protein."),
        )],
        "What kind of diet do I follow?".into(),
        "vegan".into(),
    )
    .with(
        "Is the Mediterranean diet actually healthy or just hype?".into(),
        "It's one of the best-studied eating patterns: lots of vegetables, olive oil, legumes and fish, little processed food. The evidence for heart health is solid.".into(),
    )
    .with(
        "How much protein do I need per day if I lift weights?".into(),
        "A common guideline is 1.6 to 2.2 grams per kilogram of body weight per day, spread over meals.".into(),
    )
}

fn partner_job(d: &mut Deck) -> Plan {
    let partner = d.draw(WOMEN);
    plan(
        Category::Paraphrase,
        vec![early(
            format!("{partner} is on night shifts at the hospital again this month. She's an ICU nurse, so the weeks are long for both of us."),
            format!("Night shifts are hard on the whole household. Blackout curtains and a fixed sleeping window help {partner} rest, and short notes or a shared calendar keep you connected."),
        )],
        "What does my wife do for a living?".into(),
        "she is an ICU nurse".into(),
    )
    .with(
        "My wife wants to learn to swim properly. Any adult lessons tips?".into(),
        "Look for adult-only beginner classes so nobody feels watched by kids. Two short sessions a week beat one long one, and goggles make a bigger difference than people expect.".into(),
    )
    .with(
        "What do people do for a living in the medical field besides doctors?".into(),
        "Plenty: pharmacists, physiotherapists, radiographers, lab scientists, paramedics, midwives, dieticians and many administrative roles keep a health system running.".into(),
    )
}

fn instrument(d: &mut Deck) -> Plan {
    let (thing, part) = *d.rng.pick(&[
        ("cello", "The bow"),
        ("violin", "The bow"),
        ("saxophone", "The reed"),
        ("trumpet", "The valves"),
    ]);
    plan(
        Category::Paraphrase,
        vec![early(
            format!("I've been practising scales on my {thing} every evening since the lessons began. {part} still squeaks sometimes."),
            format!("Daily scales are exactly right at the start. Squeaks from {} are normal; they fade as your control improves. Ten focused minutes beat an unfocused hour.", part.to_lowercase()),
        )],
        "Which musical instrument am I learning?".into(),
        thing.into(),
    )
    .with(
        "What musical would you recommend for someone who's never seen one?".into(),
        "Something with strong songs and a simple story works best for a first time: a classic like Les Miserables or a lighter modern show is a safe choice.".into(),
    )
    .with(
        "Is it true that learning a new skill as an adult is harder?".into(),
        "Adults often learn faster at first because they can use strategies, but they tend to have less time and more self-criticism. Regular short practice makes the difference.".into(),
    )
}

fn commute(d: &mut Deck) -> Plan {
    let minutes = d.any(&["25", "30", "35"]);
    plan(
        Category::Paraphrase,
        vec![early(
            format!("I cycle into the office every morning now, about {minutes} minutes along the canal. Beats sitting in traffic."),
            "Cycling along the canal sounds like a lovely start to the day. Lights, a good lock and a rain jacket in your bag are all you need.".into(),
        )],
        "How do I get to work?".into(),
        "by bike, along the canal".into(),
    )
    .with(
        "Work is hectic this week. How do I get through a long to-do list?".into(),
        "Pick the three tasks that matter most each morning and do the hardest first. Batch the small ones into one block in the afternoon.".into(),
    )
    .with(
        "How do I get better at waking up early?".into(),
        "Move your wake-up time by fifteen minutes every few days, get daylight soon after waking, and keep the same time at weekends.".into(),
    )
}

//! What fills a session between the facts: greetings that name the date, small talk, and
//! help requests (cooking, code, writing, travel, money, health, home, trivia) in threads of
//! one to three exchanges. A reply is three or four sentences drawn from its topic, so
//! replies vary and are about as long as a chat assistant's. Filler states no fact a question
//! asks about, but it uses the same everyday words (cities, dishes, work, travel, family).

use super::deck::Deck;
use super::plan::CITIES;

/// One filler topic: how the user asks, how a thread goes on, what the assistant says.
struct Topic {
    asks: &'static [&'static str],
    follow: &'static [&'static str],
    says: &'static [&'static str],
}

const DISHES: &[&str] = &[
    "a vegetable stir-fry",
    "pasta with roasted peppers",
    "a chickpea stew",
    "a frittata",
    "baked sweet potatoes",
    "a lentil soup",
    "a noodle salad",
    "stuffed peppers",
];
const THINGS: &[&str] = &[
    "a rice cooker",
    "a standing desk",
    "a new mattress",
    "running shoes",
    "a laptop",
    "a bread maker",
    "an e-reader",
    "a robot vacuum",
];

#[rustfmt::skip]
const TOPICS: &[Topic] = &[
    Topic { // cooking
        asks: &["What can I cook tonight with some leftover vegetables and rice?", "Can you give me an easy recipe for {dish}?", "I have friends coming over on Saturday. What's a simple main course for six?", "How do I stop my pasta from sticking together?", "What's a quick weekday lunch I can prepare the night before?", "How long do cooked leftovers keep in the fridge?"],
        follow: &["Could I make that without an oven?", "How would I make it a bit spicier?", "Can I freeze what's left over?", "What would you serve on the side?"],
        says: &["A simple option is {dish}, which comes together in about thirty minutes.", "Start by softening an onion and some garlic in olive oil over a medium heat.", "Season in layers: a little salt at each stage tastes better than a lot at the end.", "A squeeze of lemon or a splash of vinegar at the end brightens almost any dish.", "If you have fresh herbs, add the soft ones like parsley or basil right before serving.", "Most of it can be prepared in advance and reheated gently.", "Cooked food keeps three to four days in the fridge in a closed container.", "For six people, a tray bake is the least stressful choice because the oven does the work.", "Use plenty of water and stir during the first minute, when pasta sticks most.", "Chilli flakes or a spoon of harissa add heat without changing the dish much.", "Freezing works well for stews and soups, less well for anything with cream.", "A green salad with a sharp dressing balances a rich main course."],
    },
    Topic { // code
        asks: &["My Python script fails with 'KeyError' when reading a JSON file. How do I debug it?", "How do I write a SQL query that counts orders per customer?", "What's the difference between a list and a tuple in Python?", "Git says my branch has diverged. What should I do?", "How do I make a bash script stop on the first error?", "Can you explain what a race condition is?"],
        follow: &["And how would I test that?", "Is there a faster way for big files?", "What would that look like in JavaScript?", "Thanks, that fixed it. Why did it happen?"],
        says: &["The error usually means the key you ask for is not in the dictionary, so print the keys you actually received first.", "Using dict.get with a default avoids the crash, but only if a missing key is really acceptable.", "A GROUP BY on the customer id with COUNT(*) gives one row per customer.", "Lists can change after creation, tuples cannot, which makes tuples usable as dictionary keys.", "Fetch first, then decide between a rebase for a tidy history or a merge to keep both lines of work.", "Adding set -euo pipefail at the top makes the script stop on errors and unset variables.", "A race condition happens when the result depends on the timing of two things running at once.", "A small test with a fixed input file makes the bug reproducible, which is half of the fix.", "Reading the file line by line instead of all at once keeps memory flat for big inputs.", "Logging the input right before the failing line is often the quickest way to see what is going on.", "The pattern is the same in most languages; only the syntax for the error handling changes."],
    },
    Topic { // writing
        asks: &["Can you help me write a polite email asking my manager for a day off next week?", "How do I say no to an extra project at work without sounding negative?", "Can you make this sentence sound more professional: 'we messed up the deadline'?", "I need a short thank-you note for a neighbour who watered our plants.", "How should I start a cover letter?", "Can you summarise the main points of a good meeting follow-up email?"],
        follow: &["Can you make it a bit shorter?", "Could it sound warmer?", "Is that too formal?", "Perfect, thanks. One more tweak: mention the date."],
        says: &["Keep it short: the request, the dates, and how your work will be covered while you're away.", "Open with something specific and friendly rather than a generic greeting.", "You could write: 'We missed the agreed deadline, and here is our plan to recover.'", "Saying what you can do instead makes a refusal sound constructive.", "A thank-you note only needs two or three sentences and one concrete detail.", "End with a clear next step so the reader knows what you expect.", "A cover letter should open with the role and one strong reason you fit it.", "A follow-up email lists decisions, owners and deadlines, in that order.", "Reading it aloud once is the fastest way to catch awkward phrasing.", "Shorter sentences make the tone more direct without making it cold."],
    },
    Topic { // travel (generic)
        asks: &["What's worth seeing in {city} if I only have one day?", "Is it better to take the train or fly for a trip of about 600 km?", "How early should I get to the airport for a short-haul flight?", "What's the best way to avoid jet lag?", "Do I need travel insurance for a weekend trip within Europe?", "How do I find good local restaurants when I travel?"],
        follow: &["What about with kids?", "And if it rains all day?", "Is that expensive?", "How much time should I plan for that?"],
        says: &["In {city}, a walk through the old centre in the morning and a museum after lunch makes a good day.", "For around 600 km the train is often as fast door to door, and you can work on the way.", "Two hours before a short-haul flight is comfortable; less if you only have hand luggage.", "Adjust your sleep by an hour a day before you leave and get daylight at your destination.", "Insurance is cheap compared with a cancelled trip, and it covers health costs abroad.", "Walk two streets away from the main square and look for places full of locals at lunchtime.", "Booking the main sight in advance saves an hour in the queue.", "A city card with public transport included often pays for itself in a day.", "Plan one indoor option in case the weather turns.", "Markets are a good way to eat well and cheaply while you explore."],
    },
    Topic { // money
        asks: &["How do I start a monthly budget that I'll actually stick to?", "Is it better to pay off debt or save first?", "What is an index fund, in simple terms?", "How big should an emergency fund be?", "Any tips to cut the grocery bill without eating worse?", "Should I buy {thing} now or wait for the sales?"],
        follow: &["What if my income changes every month?", "How do I keep track of it?", "Is there an app for that?", "Okay, what's the first step?"],
        says: &["Start by tracking every expense for one month without changing anything.", "Split spending into needs, wants and savings, then set a limit for each.", "Paying off high-interest debt first usually beats saving at a low rate.", "An index fund buys a little of every company in an index, so you own the market instead of picking winners.", "Three to six months of essential expenses is the usual target for an emergency fund.", "Plan meals for the week and shop with a list: impulse buys are most of the overspend.", "Big sales are predictable, so unless you need it now, waiting a few weeks is often cheaper.", "Automating a transfer to savings on payday makes saving the default.", "A spreadsheet works as well as an app if you update it weekly.", "Review the budget after a month and adjust the categories that didn't fit reality."],
    },
    Topic { // health
        asks: &["I keep waking up at 4am. Any ideas why?", "How much water should I drink in a day?", "What's a good stretching routine for someone who sits all day?", "Is it okay to exercise when I have a cold?", "How do I get back into exercise after months off?", "What are some easy ways to reduce stress during a busy week?"],
        follow: &["How long until I notice a difference?", "What if that doesn't help?", "Is it fine to do that every day?", "Should I see a doctor about it?"],
        says: &["Early waking is often linked to stress, alcohol in the evening or a room that gets light too early.", "A steady wake-up time, even at weekends, is the most reliable way to fix sleep.", "Most people do well drinking when thirsty; pale yellow urine is a simple guide.", "Hip flexor, chest and neck stretches undo most of the damage from sitting.", "With a mild cold above the neck, light exercise is usually fine; with a fever, rest.", "Start with half of what you used to do and build up over a few weeks.", "A ten-minute walk outside is one of the easiest ways to lower stress.", "Writing tomorrow's three priorities down in the evening helps the mind let go.", "If it lasts more than a few weeks or worries you, a doctor's visit is worth it.", "Small habits repeated daily beat big plans that last a week."],
    },
    Topic { // home
        asks: &["The kitchen tap keeps dripping. Can I fix it myself?", "How do I get rid of mould on the bathroom ceiling?", "What's the best way to organise a small hallway?", "Which houseplants are hard to kill?", "How do I hang a heavy mirror on a plasterboard wall?", "Is it worth buying {thing}?"],
        follow: &["What tools would I need?", "How long does that take?", "Is there a cheaper way?", "What if that doesn't work?"],
        says: &["A dripping tap usually needs a new washer or cartridge, which is a cheap part.", "Turn off the water under the sink before you open anything.", "Clean mould with a diluted bleach solution and improve ventilation, or it comes back.", "Hooks at two heights and a narrow shoe rack make a small hallway much tidier.", "Snake plants, pothos and ZZ plants survive low light and forgotten watering.", "Use heavy-duty plasterboard anchors or, better, find a stud behind the board.", "Reviews from people who have owned it for a year are more useful than launch reviews.", "Most of these jobs take an hour the first time and twenty minutes after that.", "A basic screwdriver set, an adjustable spanner and a level cover most small repairs.", "If the problem comes back within weeks, the cause is elsewhere and worth a professional look."],
    },
    Topic { // trivia
        asks: &["Why is the sky blue?", "How do bees make honey?", "Who invented the printing press?", "Why do we have leap years?", "How far away is the moon?", "What's the tallest mountain in Europe?"],
        follow: &["That's fascinating, tell me more.", "Is that still true today?", "How do they know that?", "Wait, really?"],
        says: &["Sunlight is scattered by air molecules, and blue light scatters much more than red.", "Bees collect nectar, reduce its water content by fanning it, and store it in wax cells.", "Johannes Gutenberg built a movable-type printing press around 1440 in Mainz.", "A year is about 365.24 days, so an extra day every four years keeps the calendar aligned.", "The moon is on average about 384,000 kilometres away.", "Mount Elbrus in the Caucasus is usually named, at 5,642 metres; Mont Blanc if you only count Western Europe.", "Scientists measure it directly today, for example with lasers reflected from the surface.", "It is one of those facts that sounds simple and has a lot of physics behind it.", "Historians still argue about the details, but the broad story is well established.", "The same principle explains why sunsets look red."],
    },
    Topic { // learning
        asks: &["I want to learn Spanish in my free time. Where do I start?", "How do I remember what I read?", "What's a good way to learn to touch type?", "Are online courses worth it?", "How do I learn to draw as a complete beginner?", "How can I get better at chess?"],
        follow: &["How many minutes a day?", "What if I lose motivation?", "Any good free resources?", "How do I measure progress?"],
        says: &["Fifteen minutes a day beats two hours on a Sunday.", "Spaced repetition flashcards are the most efficient way to keep vocabulary.", "After reading a chapter, write three sentences about it from memory.", "Typing tutors that start with the home row work; look at the screen, never the keys.", "Online courses are worth it when they have exercises and deadlines, not just videos.", "Drawing simple objects from life every day builds skill faster than copying photos.", "In chess, solving a few tactics puzzles daily improves play fastest.", "Track one number, like words learned or minutes practised, and look at it weekly.", "Motivation comes and goes, so tie practice to something you already do every day.", "Find a partner or class: a little social pressure keeps most people going."],
    },
    Topic { // weekend and small talk
        asks: &["It's been raining all week. Any ideas for a cosy weekend at home?", "What's a fun day out with friends that isn't just going to a bar?", "I'm bored on a Sunday afternoon. Suggestions?", "What board games work well for four adults?", "Any ideas for a picnic menu?", "How do I plan a surprise party without the person finding out?"],
        follow: &["Something cheaper?", "And for a rainy day?", "What if half the group cancels?", "Love it, what else?"],
        says: &["A slow breakfast, a long film and a new recipe make a good rainy weekend.", "An escape room or a cooking class is a fun alternative to a bar.", "A walk to a part of town you haven't explored is free and surprisingly good.", "Codenames, Ticket to Ride and Wingspan all work well for four adults.", "Sandwiches on good bread, a grain salad, fruit and something sweet are an easy picnic.", "For a surprise party, use a group chat without the guest of honour and a believable cover story.", "Most of these work with a small budget if you bring your own food.", "Have a backup plan indoors in case the weather changes.", "Invite a few more people than you need; someone always cancels.", "Keeping it simple leaves more time to actually enjoy it."],
    },
];

const OPENERS: &[&str] = &[
    "Morning! It's {date} and I've got a free hour, so let's get through my list.",
    "Hi again. {date} already, where does the time go?",
    "Hello! Quick check-in on this {date}.",
    "Hey, it's {date}. Busy day ahead but I have a few questions.",
    "Good evening! {date}, finally a quiet moment.",
    "Hi! Writing to you on {date}, coffee in hand.",
];
const OPENER_REPLIES: &[&str] = &[
    "Good to hear from you! What's on your list today?",
    "Hello! Happy to help. What would you like to start with?",
    "Hi! Let's make the most of the hour. What's first?",
    "Welcome back! Go ahead, I'm listening.",
];
const CLOSERS: &[&str] = &[
    "That's all for today, thanks!",
    "Great, I'll try that. Talk soon.",
    "Thanks, that helped a lot. Bye for now!",
    "Okay, I need to run. Thanks for the help.",
];
const CLOSER_REPLIES: &[&str] = &[
    "You're welcome! Enjoy the rest of your day.",
    "Anytime. Good luck with everything!",
    "Glad it helped. Talk soon!",
];

/// The values a thread's `{city}`, `{dish}` and `{thing}` stand for (one set per thread, so
/// a reply talks about what was asked).
struct Slots([&'static str; 3]);

impl Slots {
    fn draw(deck: &mut Deck) -> Slots {
        Slots([deck.any(CITIES), deck.any(DISHES), deck.any(THINGS)])
    }

    fn fill(&self, text: &str) -> String {
        text.replace("{city}", self.0[0])
            .replace("{dish}", self.0[1])
            .replace("{thing}", self.0[2])
    }
}

/// A session's first exchange, naming its date (`Tuesday 12 March`).
pub fn opener(deck: &mut Deck, date: &str, first: bool) -> (String, String) {
    let user = if first {
        format!("Hi! It's {date}. I'm going to use this chat as my everyday assistant, so expect all sorts of questions.")
    } else {
        deck.any(OPENERS).replace("{date}", date)
    };
    (user, deck.any(OPENER_REPLIES).to_string())
}

/// A session's last exchange.
pub fn closer(deck: &mut Deck) -> (String, String) {
    (
        deck.any(CLOSERS).to_string(),
        deck.any(CLOSER_REPLIES).to_string(),
    )
}

/// A thread on one topic: a question, then zero to two follow-ups, each with its reply.
pub fn thread(deck: &mut Deck) -> Vec<(String, String)> {
    let topic = &TOPICS[deck.rng.range(0, TOPICS.len() - 1)];
    let len = deck.rng.range(1, 3);
    let mut out = Vec::with_capacity(len);
    let slots = Slots::draw(deck);
    let ask = deck.any(topic.asks);
    out.push((slots.fill(ask), slots.fill(&reply(deck, topic))));
    for _ in 1..len {
        let follow = deck.any(topic.follow);
        out.push((slots.fill(follow), slots.fill(&reply(deck, topic))));
    }
    out
}

/// Three or four distinct sentences of the topic (slots not filled yet).
fn reply(deck: &mut Deck, topic: &Topic) -> String {
    let n = deck.rng.range(3, 4);
    let mut picked: Vec<usize> = Vec::with_capacity(n);
    while picked.len() < n {
        let i = deck.rng.range(0, topic.says.len() - 1);
        if !picked.contains(&i) {
            picked.push(i);
        }
    }
    let text: Vec<&str> = picked.iter().map(|&i| topic.says[i]).collect();
    text.join(" ")
}

//! The fact kinds that connect statements: two pieces of evidence (`Multi`), a value that
//! changes later (`Updated`), a date (`Time`), and words common across the conversation
//! (`Distractor`). See `facts` for the categories and the plan a kind writes.

use super::deck::Deck;
use super::plan::{
    after, early, plan, Category, Plan, Plant, Side, CAFES, CITIES, DAYS, FILMS, HOURS, MEN,
    MONTHS, WOMEN,
};

pub fn cats(d: &mut Deck) -> Plan {
    let first = d.draw(&["Miso", "Pixel", "Clementine", "Mochi", "Ziggy", "Olive"]);
    let second = d.draw(&["Tofu", "Pesto", "Nacho", "Dumpling", "Sprout", "Marzipan"]);
    plan(
        Category::Multi,
        vec![
            early(
                format!("Our cat {first} knocked a plant off the windowsill again last night. Soil everywhere."),
                "Cats and windowsill plants rarely mix. A heavier pot or double-sided tape along the sill usually ends it.".into(),
            ),
            after(
                0,
                3,
                format!("We brought home a second cat! A tabby kitten called {second}. The two are still hissing at each other."),
                "Hissing at first is normal. Keep them in separate rooms for a few days, swap their bedding so they learn each other's smell, then meet briefly.".into(),
            ),
        ],
        "What are the names of my cats?".into(),
        format!("{first} and {second}"),
    )
    .with(
        "Why do cats sleep so much?".into(),
        "Cats are built for short bursts of hunting, so they rest twelve to sixteen hours a day to save energy.".into(),
    )
}

pub fn trip(d: &mut Deck) -> Plan {
    let first = d.draw(CITIES);
    let second = d.draw(CITIES);
    let month = d.draw(MONTHS);
    plan(
        Category::Multi,
        vec![
            early(
                format!("Booked our flights to {first} for {month}! Five nights there to start."),
                format!("Exciting! Five nights in {first} gives you time for the highlights and a slow day or two. Want help with an itinerary later?"),
            ),
            after(
                0,
                2,
                format!("Update on the {month} holiday: after {first} we'll take the train to {second} for three nights before flying home."),
                format!("{second} is a great addition, and the train is a relaxed way to get there. Book seats early, they can sell out in {month}."),
            ),
        ],
        format!("Which cities are we visiting on the {month} holiday?"),
        format!("{first}, then {second}"),
    )
    .with(
        "What should I always pack for a city holiday?".into(),
        "Comfortable shoes, a portable charger, a light rain jacket, copies of documents and a small day bag.".into(),
    )
}

pub fn concert_cost(d: &mut Deck) -> Plan {
    let band = d.any(&["Fleet Foxes", "Khruangbin", "Arctic Monkeys", "Bonobo"]);
    let tickets = d.any(&["140", "96", "180"]);
    let hotel = d.any(&["210", "165", "240"]);
    plan(
        Category::Multi,
        vec![
            early(
                format!("Got two tickets for {band} in November! Paid {tickets} euros for both."),
                format!("Great seats, I hope! {band} live should be a treat. Put the date in your calendar now."),
            ),
            after(
                0,
                2,
                format!("Booked the hotel for the {band} weekend: {hotel} euros for two nights near the venue."),
                "Staying close to the venue saves a late taxi ride. Check whether breakfast is included.".into(),
            ),
        ],
        format!("How much did the {band} weekend cost me altogether, tickets plus hotel?"),
        format!("{tickets} + {hotel} euros"),
    )
    .with(
        "How can I get cheaper concert tickets?".into(),
        "Sign up for presales through the venue or the artist's newsletter, avoid resale sites at launch and watch for official resale closer to the date.".into(),
    )
}

pub fn gifts(d: &mut Deck) -> Plan {
    let friend = d.draw(WOMEN);
    let first = d.any(&[
        "a ceramic teapot",
        "a silk scarf",
        "a pottery class voucher",
    ]);
    let second = d.any(&[
        "a first edition of her favourite novel",
        "a framed map of her hometown",
        "noise-cancelling headphones",
    ]);
    plan(
        Category::Multi,
        vec![
            early(
                format!("For {friend}'s birthday I bought {first}. I hope she likes it."),
                format!("That sounds thoughtful. Add a handwritten card and {friend} will love it."),
            ),
            after(
                0,
                2,
                format!("I also ordered {second} for {friend}'s birthday, I couldn't resist."),
                "Two gifts it is! That one sounds like something she'll keep for years.".into(),
            ),
        ],
        format!("What birthday presents did I get for {friend}?"),
        format!("{first} and {second}"),
    )
    .with(
        "What's a good birthday present for a colleague I don't know well?".into(),
        "Something small and consumable: good chocolate, a plant, or a nice coffee. Keep it under the usual office budget.".into(),
    )
}

pub fn dentist(d: &mut Deck) -> Plan {
    let (first, second) = (d.draw(DAYS), d.draw(DAYS));
    let (t1, t2) = (d.any(HOURS), d.any(HOURS));
    let mut p = plan(
        Category::Updated,
        vec![
            early(
                format!("Remind me: my dentist appointment is on {first} at {t1}."),
                format!(
                    "Got it: dentist on {first} at {t1}. Set a phone reminder the day before too."
                ),
            ),
            after(
                0,
                3,
                format!("The dentist called and moved my appointment to {second} at {t2}."),
                format!("Noted, the new slot is {second} at {t2}."),
            ),
        ],
        "When is my dentist appointment?".into(),
        format!("{second} at {t2}"),
    );
    p.plants[0].evidence = Side::None;
    p.with(
        "My dentist says I should floss more. Is it really that important?".into(),
        "Yes: flossing cleans between the teeth where a brush can't reach, and that's where gum disease usually starts.".into(),
    )
}

pub fn move_city(d: &mut Deck) -> Plan {
    let first = d.draw(CITIES);
    let second = d.draw(CITIES);
    let mut p = plan(
        Category::Updated,
        vec![
            early(
                format!("We've been talking about it for ages and decided: we're moving to {first} next year."),
                format!("A big decision! {first} has a lot going for it. Start with neighbourhoods and schools, and maybe a long weekend there to get a feel."),
            ),
            after(
                0,
                4,
                format!("Change of plans on the move: we're going to {second} instead of {first}. Better schools and closer to family."),
                format!("That makes sense; schools and family are good reasons. {second} it is."),
            ),
        ],
        "Which city are we planning to move to?".into(),
        second.into(),
    );
    p.plants[0].evidence = Side::None;
    p.with(
        format!("Is {first} expensive to live in compared to where I am now?"),
        "It depends mostly on rent: compare a two-bedroom flat in a similar neighbourhood and typical salaries in your field there.".into(),
    )
}

pub fn rent(d: &mut Deck) -> Plan {
    let old = d.any(&["1,150", "1,280", "980"]);
    let new = d.any(&["1,340", "1,395", "1,220"]);
    let mut p = plan(
        Category::Updated,
        vec![
            early(
                format!("Our rent is {old} euros a month, which is a lot for a two-bedroom flat."),
                format!("{old} a month for a two-bedroom is on the high side in many cities. Worth comparing listings near you before your lease renews."),
            ),
            after(
                0,
                4,
                format!("The landlord just raised the rent to {new} euros from next month. Not thrilled."),
                format!("That's a steep rise to {new}. Check your contract and local rules on increases, and ask whether it's negotiable."),
            ),
        ],
        "How much rent do we pay each month now?".into(),
        format!("{new} euros"),
    );
    p.plants[0].evidence = Side::None;
    p.with(
        "Should I rent or buy in the current market?".into(),
        "It depends on how long you'll stay, interest rates and the price-to-rent ratio where you live. Staying less than five years usually favours renting.".into(),
    )
}

pub fn race_goal(d: &mut Deck) -> Plan {
    let city = d.draw(CITIES);
    let mut p = plan(
        Category::Updated,
        vec![
            early(
                format!("I signed up for the {city} half marathon in the autumn. Time to start training properly!"),
                "A half marathon is a great goal. Twelve weeks of training with three runs a week is a common plan.".into(),
            ),
            after(
                0,
                3,
                format!("I switched my entry in {city} to the full marathon! Terrified and excited."),
                "Wow, the full distance! You'll need to build your long run gradually, adding about ten percent a week.".into(),
            ),
        ],
        format!("Which race am I training for in {city}?"),
        "the full marathon".into(),
    );
    p.plants[0].evidence = Side::None;
    p.with(
        "How do I avoid shin splints when I train for a race?".into(),
        "Increase your mileage slowly, run on softer surfaces when you can, and replace worn-out shoes. Calf raises help too.".into(),
    )
}

/// A thing done on a day, with the same kind of thing said on other days (the distractors).
fn dated(question: String, answer: String, fact: Plant, others: Vec<(String, String)>) -> Plan {
    let mut p = plan(Category::Time, vec![fact], question, answer);
    p.distractors = others;
    p
}

pub fn film_date(d: &mut Deck) -> Plan {
    let film = d.draw(FILMS);
    let others: Vec<(String, String)> = (0..3)
        .map(|_| {
            let other = d.draw(FILMS);
            (
                format!("Watched {other} last night. Still thinking about it."),
                format!("{other} stays with people! What stood out most for you?"),
            )
        })
        .collect();
    dated(
        "On {date} I mentioned a film I had watched the night before. Which film was it?".into(),
        film.into(),
        early(
            format!("Watched {film} last night. Still thinking about the ending."),
            format!("{film} has one of those endings that grows on you. What did you make of it?"),
        ),
        others,
    )
}

pub fn lunch_date(d: &mut Deck) -> Plan {
    let friend = d.draw(MEN);
    let cafe = d.draw(CAFES);
    let others: Vec<(String, String)> = (0..3)
        .map(|_| {
            let (f, c) = (d.draw(MEN), d.any(CAFES));
            (
                format!("Had lunch with {f} at the {c} today, we talked for two hours."),
                format!("Long lunches with friends are the best. How is {f} doing?"),
            )
        })
        .collect();
    dated(
        "Who did I have lunch with on {date}?".into(),
        friend.into(),
        early(
            format!("Had lunch with {friend} at the {cafe} today, really good to catch up."),
            format!("Lovely! It's good to make time for friends like {friend} in a busy week."),
        ),
        others,
    )
}

pub fn pottery_start(d: &mut Deck) -> Plan {
    let teacher = d.draw(WOMEN);
    let mut p = plan(
        Category::Time,
        vec![early(
            format!("First pottery class tonight! The teacher, {teacher}, let us try the wheel straight away. My bowl collapsed twice."),
            "Collapsing bowls are a rite of passage on the wheel. Centring the clay is most of the skill and it takes a few sessions.".into(),
        )],
        "On what date did I have my first pottery class?".into(),
        "{date}".into(),
    );
    p.dated = true;
    p.with(
        "Any tips for glazing pottery at home?".into(),
        "Glazing needs a kiln, so most people glaze at the studio. At home you can practise with underglaze pens on bisque-fired pieces.".into(),
    )
}

pub fn starter_name(d: &mut Deck) -> Plan {
    let name = d.draw(&[
        "Doughbi-Wan",
        "Bread Pitt",
        "Clint Yeastwood",
        "Gloria",
        "Mother Dough",
    ]);
    plan(
        Category::Distractor,
        vec![early(
            format!("My sourdough starter finally has a name: {name}. It doubled overnight, so baking bread on Sunday."),
            format!("{name} is a great name for a starter! If it doubles overnight it's ready; use it at its peak for the best rise."),
        )],
        "What did I name my sourdough starter?".into(),
        name.into(),
    )
    .with(
        "My sourdough bread came out dense again. What am I doing wrong?".into(),
        "Usually the starter wasn't at its peak or the bulk fermentation was too short. Let the dough rise until it has grown by about half and feels airy.".into(),
    )
    .with(
        "How often should I feed a sourdough starter kept in the fridge?".into(),
        "Once a week is enough for a starter in the fridge. Take it out a day before baking and feed it twice at room temperature.".into(),
    )
    .with(
        "Can I use sourdough starter discard for pancakes?".into(),
        "Yes, discard pancakes are great: mix discard with flour, milk, an egg and a little baking soda for fluffy, slightly tangy pancakes.".into(),
    )
}

pub fn coffee(d: &mut Deck) -> Plan {
    let (bean, roaster) = *d.rng.pick(&[
        ("Ethiopian Yirgacheffe", "Kettle and Crow"),
        ("Colombian Huila", "North Star"),
        ("Kenyan AA", "Ember Roasters"),
    ]);
    plan(
        Category::Distractor,
        vec![early(
            format!("Found my favourite coffee ever: the {bean} from {roaster}. Fruity, almost like tea."),
            format!("The {bean} is known for those bright, fruity notes. A pour-over brings them out best."),
        )],
        "Which coffee did I say was my favourite?".into(),
        format!("the {bean} from {roaster}"),
    )
    .with(
        "Is it bad to drink coffee after 3pm?".into(),
        "Caffeine's half-life is about five hours, so afternoon coffee can affect sleep. Try decaf after lunch for a week and see.".into(),
    )
    .with(
        "What's the difference between a flat white and a latte?".into(),
        "A flat white has less milk and a thinner layer of microfoam, so the coffee tastes stronger; a latte is milkier.".into(),
    )
    .with(
        "My coffee grinder is making uneven grounds. Is it worth upgrading?".into(),
        "If it's a blade grinder, yes: a burr grinder gives even grounds and makes a noticeable difference to the coffee.".into(),
    )
}

pub fn standup_room(d: &mut Deck) -> Plan {
    let room = d.any(&["Ada", "Turing", "Hopper", "Lovelace"]);
    let floor = d.any(&["third", "fourth", "fifth"]);
    plan(
        Category::Distractor,
        vec![early(
            format!("Our daily standup moved to the {room} room on the {floor} floor, 9:30 every morning."),
            format!("Noted: standup in the {room} room on the {floor} floor at 9:30. Worth arriving a minute early the first few days."),
        )],
        "Which meeting room is our daily standup in now?".into(),
        format!("the {room} room, {floor} floor"),
    )
    .with(
        "How do I keep a daily standup meeting under fifteen minutes?".into(),
        "Stick to what changed, what's next and what's blocked, and take detailed discussions to a follow-up meeting with only the people involved.".into(),
    )
    .with(
        "Our meeting rooms are always double-booked. Any ideas?".into(),
        "Release a room automatically when nobody checks in within ten minutes, and cap recurring bookings so old meetings don't hold rooms forever.".into(),
    )
    .with(
        "Write me a short agenda for a weekly team meeting.".into(),
        "1. Wins of the week (5 min). 2. Metrics and progress (10 min). 3. Blockers (10 min). 4. Decisions needed (10 min). 5. Action items and owners (5 min).".into(),
    )
}

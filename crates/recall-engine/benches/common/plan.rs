//! What a fact kind writes (`facts`, `linked`): its category, the exchanges that state it and
//! when, its distractors and its question; and the pools its values are drawn from.

/// What a question tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    Keyword,
    Paraphrase,
    Multi,
    Updated,
    Time,
    Distractor,
    // LoCoMo's (`locomo.rs`).
    MultiHop,
    Temporal,
    OpenDomain,
    SingleHop,
}

impl Category {
    pub const ALL: [Category; 10] = [
        Category::Keyword,
        Category::Paraphrase,
        Category::Multi,
        Category::Updated,
        Category::Time,
        Category::Distractor,
        Category::MultiHop,
        Category::Temporal,
        Category::OpenDomain,
        Category::SingleHop,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Category::Keyword => "keyword",
            Category::Paraphrase => "paraphrase",
            Category::Multi => "multi-evidence",
            Category::Updated => "updated fact",
            Category::Time => "time",
            Category::Distractor => "distractor-heavy",
            Category::MultiHop => "multi-hop",
            Category::Temporal => "temporal",
            Category::OpenDomain => "open-domain",
            Category::SingleHop => "single-hop",
        }
    }
}

/// When a statement is made.
#[derive(Debug, Clone, Copy)]
pub enum When {
    /// In the first 60% of the sessions.
    Early,
    /// At least `gap` sessions after the statement `plant` (an index into `Plan::plants`).
    After { plant: usize, gap: usize },
}

/// Which message of a statement's exchange is evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    User,
    Assistant,
    /// Not evidence (an old value that was updated later).
    None,
}

/// One exchange that states (part of) a fact.
#[derive(Debug, Clone)]
pub struct Plant {
    pub when: When,
    pub user: String,
    pub assistant: String,
    pub evidence: Side,
}

/// A fact: its statements, its distractors, and the question about it. `{date}` in the
/// question and answer is the spoken date of the first statement's session.
#[derive(Debug, Clone)]
pub struct Plan {
    pub category: Category,
    pub plants: Vec<Plant>,
    pub distractors: Vec<(String, String)>,
    pub question: String,
    pub answer: String,
    /// The first statement's session greeting (which names the date) is evidence too.
    pub dated: bool,
}

pub fn early(user: String, assistant: String) -> Plant {
    Plant {
        when: When::Early,
        user,
        assistant,
        evidence: Side::User,
    }
}

pub fn after(plant: usize, gap: usize, user: String, assistant: String) -> Plant {
    Plant {
        when: When::After { plant, gap },
        user,
        assistant,
        evidence: Side::User,
    }
}

pub fn plan(category: Category, plants: Vec<Plant>, question: String, answer: String) -> Plan {
    Plan {
        category,
        plants,
        distractors: Vec::new(),
        question,
        answer,
        dated: false,
    }
}

impl Plan {
    pub fn with(mut self, user: String, assistant: String) -> Plan {
        self.distractors.push((user, assistant));
        self
    }
}

pub const WOMEN: &[&str] = &[
    "Priya", "Hannah", "Sofia", "Marta", "Chloe", "Ingrid", "Leila", "Yuki", "Amara", "Nadia",
    "Elena", "Grace", "Zoe", "Freya", "Lucia", "Maya", "Rosa", "Aisha",
];
pub const MEN: &[&str] = &[
    "Tom", "Arjun", "Lukas", "Mateo", "Oliver", "Kenji", "Samuel", "Dmitri", "Felix", "Omar",
    "Ravi", "Jonas", "Hugo", "Theo", "Marco", "Ethan", "Callum", "Nico",
];
pub const CITIES: &[&str] = &[
    "Lisbon",
    "Vienna",
    "Montreal",
    "Edinburgh",
    "Porto",
    "Seville",
    "Krakow",
    "Osaka",
    "Melbourne",
    "Copenhagen",
    "Valencia",
    "Bologna",
    "Ljubljana",
    "Tallinn",
    "Bergen",
    "Galway",
    "Kyoto",
    "Granada",
    "Antwerp",
    "Utrecht",
];
pub const SURNAMES: &[&str] = &[
    "Okafor",
    "Lindqvist",
    "Moreau",
    "Castellano",
    "Brennan",
    "Novak",
    "Haddad",
    "Tanaka",
    "Fischer",
    "Petrov",
    "Achebe",
    "Whitfield",
];
pub const MONTHS: &[&str] = &["April", "May", "June", "July", "September", "October"];
pub const DAYS: &[&str] = &["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"];
pub const HOURS: &[&str] = &["8:30", "9:15", "10:40", "11:20", "14:10", "15:45", "16:30"];
pub const FILMS: &[&str] = &[
    "Arrival",
    "Paddington 2",
    "Spirited Away",
    "The Grand Budapest Hotel",
    "Parasite",
    "Past Lives",
    "Dune",
    "Amelie",
    "Heat",
    "Moonlight",
    "Whiplash",
    "Alien",
];
pub const CAFES: &[&str] = &[
    "Blue Heron",
    "Little Fig",
    "Copper Kettle",
    "Marigold",
    "Olive Tree",
    "Salt and Rye",
];

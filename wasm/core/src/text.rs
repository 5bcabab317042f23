//! Error messages built without `core::fmt`: `msg!["need 1..=", max,
//! ", got ", n]` concatenates string pieces and integers in decimal. The
//! messages read as before, and the browser's client module (no_std, see
//! `lib.rs`) carries no formatting machinery for them. Public for the
//! bindings' messages only (`ricochet_core::msg!`).

pub use alloc::string::String;

/// One piece of a message.
pub trait Piece {
    fn put(&self, out: &mut String);
}

impl Piece for &str {
    fn put(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl Piece for String {
    fn put(&self, out: &mut String) {
        out.push_str(self);
    }
}

fn put_decimal(mut n: u64, out: &mut String) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[i..].iter().map(|&d| d as char));
}

macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl Piece for $t {
            fn put(&self, out: &mut String) {
                put_decimal(*self as u64, out);
            }
        }
    )*};
}
unsigned!(u8, u16, u32, u64, usize);

impl Piece for i64 {
    fn put(&self, out: &mut String) {
        if *self < 0 {
            out.push('-');
        }
        put_decimal(self.unsigned_abs(), out);
    }
}

/// `msg![piece, …]`: the pieces (string slices, `String`s, integers) joined.
#[doc(hidden)]
#[macro_export]
macro_rules! msg {
    ($($piece:expr),+ $(,)?) => {{
        let mut out = $crate::text::String::new();
        $( $crate::text::Piece::put(&$piece, &mut out); )+
        out
    }};
}

/// `bytes` as text, each invalid UTF-8 sequence replaced by U+FFFD, exactly
/// as `String::from_utf8_lossy` does (WIRE.md: reasons), in a fraction of
/// the code: std's version (its `Utf8Chunks`) was ~0.5 KB gzip of the
/// browser's client module.
pub fn lossy(mut bytes: &[u8]) -> String {
    let mut out = String::new();
    loop {
        match core::str::from_utf8(bytes) {
            Ok(text) => {
                out.push_str(text);
                return out;
            }
            Err(e) => {
                let (good, rest) = bytes.split_at(e.valid_up_to());
                out.push_str(core::str::from_utf8(good).unwrap_or_default());
                out.push('\u{FFFD}');
                bytes = &rest[e.error_len().map_or(rest.len(), usize::from)..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lossy_text_matches_std() {
        let cases: [&[u8]; 10] = [
            b"",
            b"plain",
            "à bientôt 👋".as_bytes(),
            b"\xff",
            b"a\xffb\xfe",
            b"\xe2\x82",              // truncated at the end
            b"\xe2\x82x\xe2\x82\xac", // truncated, then a whole euro sign
            b"\xf0\x9f\x98",          // 3 of 4 bytes
            b"\xed\xa0\x80",          // a surrogate
            b"\xc0\xafok\xf5",        // overlong, then out of range
        ];
        for c in cases {
            assert_eq!(lossy(c), String::from_utf8_lossy(c), "{c:?}");
        }
        // Every two-byte input, and three- and four-byte ones around the
        // lead and continuation boundaries.
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                assert_eq!(lossy(&[a, b]), String::from_utf8_lossy(&[a, b]));
                for c in [0x41, 0x7f, 0x80, 0x9f, 0xa0, 0xbf, 0xc0, 0xff] {
                    let v = [a, b, c, 0x80];
                    assert_eq!(lossy(&v), String::from_utf8_lossy(&v));
                    assert_eq!(lossy(&v[..3]), String::from_utf8_lossy(&v[..3]));
                }
            }
        }
    }

    #[test]
    fn pieces_read_as_format_would() {
        for n in [0u64, 7, 10, 65507, u64::MAX] {
            assert_eq!(msg!["got ", n, "."], format!("got {n}."));
        }
        for n in [0i64, -1, 42, i64::MIN, i64::MAX] {
            assert_eq!(msg![n], format!("{n}"));
        }
        assert_eq!(
            msg!["a", String::from("b"), 3u8, 4usize, 5u16, 6u32],
            "ab3456"
        );
    }
}

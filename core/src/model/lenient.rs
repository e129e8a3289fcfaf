//! Typed fields that accept any JSON, for reading model stream chunks without building a
//! `serde_json::Value` per chunk: a field of the wrong type reads as absent (as `Value`'s
//! `as_str` / `as_u64` / `get` lookups did), strings are borrowed from the chunk unless they
//! carry escapes, and whatever is not kept is skipped without allocating.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Skip the rest of a sequence.
fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Skip the rest of a map.
fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Implements the visits of every JSON type that a lenient field does not keep.
macro_rules! ignore_others {
    ($($skip:ident),*) => {
        $(ignore_others!(@one $skip);)*
    };
    (@one bool) => { fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> { Ok(Default::default()) } };
    (@one i64) => { fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> { Ok(Default::default()) } };
    (@one u64) => { fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> { Ok(Default::default()) } };
    (@one f64) => { fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> { Ok(Default::default()) } };
    (@one str) => { fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> { Ok(Default::default()) } };
    (@one unit) => {
        fn visit_unit<E>(self) -> Result<Self::Value, E> { Ok(Default::default()) }
        fn visit_none<E>(self) -> Result<Self::Value, E> { Ok(Default::default()) }
    };
    (@one seq) => {
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            drain_seq(seq)?;
            Ok(Default::default())
        }
    };
    (@one map) => {
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            drain_map(map)?;
            Ok(Default::default())
        }
    };
}

/// A string, or `None` for any other JSON value.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Str<'a>(pub Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Str<'a>, E> {
                Ok(Str(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E>(self, s: &str) -> Result<Str<'a>, E> {
                Ok(Str(Some(Cow::Owned(s.to_string()))))
            }
            fn visit_string<E>(self, s: String) -> Result<Str<'a>, E> {
                Ok(Str(Some(Cow::Owned(s))))
            }
            ignore_others!(bool, i64, u64, f64, unit, seq, map);
        }
        d.deserialize_any(V(PhantomData))
    }
}

impl Str<'_> {
    /// The string, when it was one.
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

/// A string as it is (borrowed when it carries no escapes), any other JSON value but `null` as
/// its JSON text, `null` as `None`: what `Option<Value>` and `as_str`-or-`to_string` gave, without
/// a `Value` (and its `String`) for the common case of a string.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Text<'a>(pub Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        fn json<'a>(v: serde_json::Value) -> Text<'a> {
            Text(Some(Cow::Owned(v.to_string())))
        }
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E>(self, s: &str) -> Result<Text<'a>, E> {
                Ok(Text(Some(Cow::Owned(s.to_string()))))
            }
            fn visit_string<E>(self, s: String) -> Result<Text<'a>, E> {
                Ok(Text(Some(Cow::Owned(s))))
            }
            fn visit_unit<E>(self) -> Result<Text<'a>, E> {
                Ok(Text(None))
            }
            fn visit_none<E>(self) -> Result<Text<'a>, E> {
                Ok(Text(None))
            }
            fn visit_bool<E>(self, b: bool) -> Result<Text<'a>, E> {
                Ok(json(b.into()))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Text<'a>, E> {
                Ok(json(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Text<'a>, E> {
                Ok(json(n.into()))
            }
            fn visit_f64<E>(self, n: f64) -> Result<Text<'a>, E> {
                Ok(json(n.into()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Text<'a>, A::Error> {
                serde_json::Value::deserialize(SeqAccessDeserializer::new(seq)).map(json)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Text<'a>, A::Error> {
                serde_json::Value::deserialize(MapAccessDeserializer::new(map)).map(json)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A non-negative integer, or `None` for any other JSON value (a float, a negative number).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct U64(pub Option<u64>);

impl<'de> Deserialize<'de> for U64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = U64;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_u64<E>(self, n: u64) -> Result<U64, E> {
                Ok(U64(Some(n)))
            }
            fn visit_i64<E>(self, n: i64) -> Result<U64, E> {
                Ok(U64(u64::try_from(n).ok()))
            }
            ignore_others!(bool, f64, str, unit, seq, map);
        }
        d.deserialize_any(V)
    }
}

/// A JSON object read as `T` (with `T`'s own lenient fields); any other JSON value reads as
/// `None`.
#[derive(Debug, PartialEq)]
pub(crate) struct Obj<T>(pub Option<T>);

impl<T> Default for Obj<T> {
    fn default() -> Self {
        Obj(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Obj<T>, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(|t| Obj(Some(t)))
            }
            ignore_others!(bool, i64, u64, f64, str, unit, seq);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A JSON array whose elements read as `T`; `None` for any other JSON value.
#[derive(Debug, PartialEq)]
pub(crate) struct Seq<T>(pub Option<Vec<T>>);

impl<T> Default for Seq<T> {
    fn default() -> Self {
        Seq(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Seq<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Seq<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Seq<T>, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(16));
                while let Some(item) = seq.next_element::<T>()? {
                    items.push(item);
                }
                Ok(Seq(Some(items)))
            }
            ignore_others!(bool, i64, u64, f64, str, unit, map);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// The first element of a JSON array, read as `T` (the rest skipped); `None` for an empty array
/// or any other JSON value.
#[derive(Debug, PartialEq)]
pub(crate) struct First<T>(pub Option<T>);

impl<T> Default for First<T> {
    fn default() -> Self {
        First(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for First<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = First<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<First<T>, A::Error> {
                let first = seq.next_element::<T>()?;
                drain_seq(seq)?;
                Ok(First(first))
            }
            ignore_others!(bool, i64, u64, f64, str, unit, map);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A string, or a JSON array whose elements read as `T` (an openai-style `content` that is
/// text or a list of parts); [`StrOr::Neither`] for any other JSON value.
#[derive(Debug, Default, PartialEq)]
pub(crate) enum StrOr<'a, T> {
    #[default]
    Neither,
    Str(Cow<'a, str>),
    Seq(Vec<T>),
}

impl<'de: 'a, 'a, T: Deserialize<'de>> Deserialize<'de> for StrOr<'a, T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a, T>(PhantomData<(&'a (), T)>);
        impl<'de: 'a, 'a, T: Deserialize<'de>> Visitor<'de> for V<'a, T> {
            type Value = StrOr<'a, T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(StrOr::Str(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(StrOr::Str(Cow::Owned(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
                Ok(StrOr::Str(Cow::Owned(s)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(16));
                while let Some(item) = seq.next_element::<T>()? {
                    items.push(item);
                }
                Ok(StrOr::Seq(items))
            }
            ignore_others!(bool, i64, u64, f64, unit, map);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// Whether a key was there at all, whatever its value (`null` included), and its value as `T`
/// (a plain `Option` field would read `null` as absent).
#[derive(Debug, PartialEq)]
pub(crate) struct Present<T = serde_json::Value>(pub Option<T>);

impl<T> Default for Present<T> {
    fn default() -> Self {
        Present(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Present<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(|v| Present(Some(v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Probe<'a> {
        #[serde(borrow)]
        s: Str<'a>,
        n: U64,
        o: Obj<Inner>,
        l: Seq<U64>,
        f: First<U64>,
        p: Present,
        q: Present<Obj<Inner>>,
    }

    #[derive(Deserialize, Default, Debug, PartialEq)]
    #[serde(default)]
    struct Inner {
        k: U64,
    }

    #[test]
    fn a_field_of_another_type_reads_as_absent() {
        let wrong =
            r#"{"s": [1, {"x": "y"}], "n": -3, "o": "text", "l": {"a": 1}, "f": [], "zz": [[{}]]}"#;
        let p: Probe = serde_json::from_str(wrong).unwrap();
        assert_eq!(p.s, Str(None));
        assert_eq!(p.n, U64(None));
        assert_eq!(p.o, Obj(None));
        assert_eq!(p.l, Seq(None));
        assert_eq!(p.f, First(None));
        assert_eq!(p.p, Present(None));
        assert_eq!(p.q, Present(None));
        let floats: Probe = serde_json::from_str(r#"{"n": 1.5, "s": 2, "o": null}"#).unwrap();
        assert_eq!(
            (floats.n, floats.s, floats.o),
            (U64(None), Str(None), Obj(None))
        );
    }

    #[test]
    fn a_field_of_its_type_is_kept_and_strings_are_borrowed_when_they_can_be() {
        let right = r#"{"s": "plain", "n": 7, "o": {"k": 2, "other": [1]}, "l": [1, "x", 3],
                        "f": [4, 5, 6], "p": null, "q": null}"#;
        let p: Probe = serde_json::from_str(right).unwrap();
        assert!(matches!(p.s.0, Some(Cow::Borrowed("plain"))));
        assert_eq!(p.n, U64(Some(7)));
        assert_eq!(p.o, Obj(Some(Inner { k: U64(Some(2)) })));
        assert_eq!(p.l, Seq(Some(vec![U64(Some(1)), U64(None), U64(Some(3))])));
        assert_eq!(p.f, First(Some(U64(Some(4)))));
        assert_eq!(p.p, Present(Some(serde_json::Value::Null)));
        assert_eq!(p.q, Present(Some(Obj(None))));
        let escaped: Probe = serde_json::from_str(r#"{"s": "a\"b\u00e9"}"#).unwrap();
        assert_eq!(escaped.s.get(), Some("a\"bé"));
    }

    #[test]
    fn text_keeps_strings_and_writes_other_values_as_their_json() {
        #[derive(Deserialize)]
        struct T<'a> {
            #[serde(borrow)]
            t: Text<'a>,
        }
        let read = |json: &str| {
            serde_json::from_str::<T>(json)
                .unwrap()
                .t
                .0
                .map(|c| c.into_owned())
        };
        assert!(matches!(
            serde_json::from_str::<T>(r#"{"t": "{\"a\""}"#).unwrap().t.0,
            Some(Cow::Owned(_))
        ));
        assert!(matches!(
            serde_json::from_str::<T>(r#"{"t": "plain"}"#).unwrap().t.0,
            Some(Cow::Borrowed("plain"))
        ));
        assert_eq!(read(r#"{"t": null}"#), None);
        assert_eq!(read(r#"{"t": "{\"a\""}"#).as_deref(), Some(r#"{"a""#));
        // What `Value::to_string` wrote for each, byte for byte.
        for other in [
            r#"{"b":[1,2.5,true,null],"a":"x"}"#,
            "[]",
            "-3",
            "18446744073709551615",
            "1.5e300",
            "false",
        ] {
            let want = serde_json::from_str::<serde_json::Value>(other)
                .unwrap()
                .to_string();
            assert_eq!(read(&format!(r#"{{"t": {other}}}"#)), Some(want), "{other}");
        }
        // Nesting past serde_json's recursion limit is an error, not a stack overflow.
        let deep = format!(r#"{{"t": {}{}}}"#, "[".repeat(100_000), "]".repeat(100_000));
        assert!(serde_json::from_str::<T>(&deep).is_err());
    }

    #[test]
    fn broken_json_is_still_an_error() {
        assert!(serde_json::from_str::<Probe>(r#"{"s": "open"#).is_err());
        assert!(serde_json::from_str::<Probe>(r#"{"o": {"k": }}"#).is_err());
    }
}

//! Reading structs only from JSON objects: a derived `Deserialize` also takes fields as an undocumented array
//! (`["quire.thread", 1, ...]`), so the import formats read their structs through these, at no cost in memory.

use std::{collections::HashMap, fmt, hash::Hash, marker::PhantomData};

use serde::de::{value::MapAccessDeserializer, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A `T` read from a JSON object only.
#[derive(Debug, Clone, PartialEq)]
pub struct Object<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        one(deserializer).map(Object)
    }
}

struct ObjectVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map))
    }
}

/// A count as JSON may write it: `335` or `335.0` (JSON Schema's `integer` is any number without a fraction).
/// A fraction, a negative number, or a written-out float past 2^53 (where floats stop being exact) is refused.
struct Whole(u64);

impl<'de> Deserialize<'de> for Whole {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct WholeVisitor;

        impl Visitor<'_> for WholeVisitor {
            type Value = Whole;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a whole number, 0 or more")
            }

            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Whole, E> {
                Ok(Whole(n))
            }

            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Whole, E> {
                u64::try_from(n).map(Whole).map_err(|_| E::custom(format!("{n} is below 0")))
            }

            fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Whole, E> {
                if n.fract() == 0.0 && (0.0..=9_007_199_254_740_992.0).contains(&n) {
                    Ok(Whole(n as u64))
                } else {
                    Err(E::custom(format!("{n} is not a whole number from 0 to 2^53")))
                }
            }
        }

        deserializer.deserialize_any(WholeVisitor)
    }
}

/// A whole number from 0 to 2^53 as an `i64`, written with or without `.0` (see [`Whole`]).
pub fn whole_i64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    let Whole(n) = Whole::deserialize(deserializer)?;
    i64::try_from(n).map_err(|_| serde::de::Error::custom(format!("{n} is too large")))
}

/// A count up to `u32::MAX`, written with or without `.0` (see [`Whole`]).
pub fn whole<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    let Whole(n) = Whole::deserialize(deserializer)?;
    u32::try_from(n).map_err(|_| serde::de::Error::custom(format!("{n} is past {}", u32::MAX)))
}

/// A count or `null`, written with or without `.0` (see [`Whole`]; a missing field needs `#[serde(default)]`).
pub fn optional_whole<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    Ok(Option::<Whole>::deserialize(deserializer)?.map(|Whole(n)| n))
}

/// One struct, from an object.
pub fn one<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<T, D::Error> {
    deserializer.deserialize_map(ObjectVisitor(PhantomData))
}

/// A struct or `null` (a missing field needs `#[serde(default)]` too).
pub fn optional<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Option<T>, D::Error> {
    Ok(Option::<Object<T>>::deserialize(deserializer)?.map(|Object(value)| value))
}

/// An array of structs, each from an object.
pub fn many<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Vec<T>, D::Error> {
    struct Many<T>(PhantomData<T>);

    impl<'de, T: Deserialize<'de>> Visitor<'de> for Many<T> {
        type Value = Vec<T>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an array of objects")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
            while let Some(Object(item)) = seq.next_element()? {
                items.push(item);
            }
            Ok(items)
        }
    }

    deserializer.deserialize_seq(Many(PhantomData))
}

/// An object whose values are structs, each from an object.
pub fn values<'de, D, K, T>(deserializer: D) -> Result<HashMap<K, T>, D::Error>
where
    D: Deserializer<'de>,
    K: Deserialize<'de> + Eq + Hash,
    T: Deserialize<'de>,
{
    struct Values<K, T>(PhantomData<(K, T)>);

    impl<'de, K: Deserialize<'de> + Eq + Hash, T: Deserialize<'de>> Visitor<'de> for Values<K, T> {
        type Value = HashMap<K, T>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object of objects")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut values = HashMap::with_capacity(map.size_hint().unwrap_or(0).min(4096));
            while let Some((key, Object(value))) = map.next_entry()? {
                values.insert(key, value);
            }
            Ok(values)
        }
    }

    deserializer.deserialize_map(Values(PhantomData))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    struct Counts {
        #[serde(deserialize_with = "whole")]
        hours: u32,
        #[serde(default, deserialize_with = "optional_whole")]
        budget: Option<u64>,
    }

    #[test]
    fn counts_may_be_written_as_floats_without_a_fraction() {
        let read = |json: &str| serde_json::from_str::<Counts>(json).map(|c| (c.hours, c.budget));
        assert_eq!(
            read(r#"{"hours": 335.0, "budget": 4503599627370495.0}"#).unwrap(),
            (335, Some(4_503_599_627_370_495))
        );
        assert_eq!(read(r#"{"hours": 3, "budget": null}"#).unwrap(), (3, None));
        assert_eq!(read(r#"{"hours": 3}"#).unwrap(), (3, None));
        for bad in [
            r#"{"hours": 3.5}"#,
            r#"{"hours": -1}"#,
            r#"{"hours": 4294967296}"#,
            r#"{"hours": "3"}"#,
            r#"{"hours": 1, "budget": 1e300}"#,
        ] {
            assert!(read(bad).is_err(), "{bad}");
        }
    }
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Point {
        x: i32,
        #[serde(default)]
        y: i32,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Shape {
        #[serde(deserialize_with = "one")]
        origin: Point,
        #[serde(default, deserialize_with = "optional")]
        end: Option<Point>,
        #[serde(deserialize_with = "many")]
        path: Vec<Point>,
        #[serde(default, deserialize_with = "values")]
        named: HashMap<String, Point>,
    }

    #[test]
    fn structs_come_from_objects_only() {
        let shape: Shape = serde_json::from_str(
            r#"{"origin": {"x": 1}, "end": null, "path": [{"x": 2, "y": 3}], "named": {"a": {"x": 4}}}"#,
        )
        .unwrap();
        assert_eq!(shape.origin, Point { x: 1, y: 0 });
        assert_eq!((shape.end, shape.path.len(), shape.named["a"].x), (None, 1, 4));
        for array in [
            r#"{"origin": [1, 2], "path": []}"#,
            r#"{"origin": {"x": 1}, "end": [1], "path": []}"#,
            r#"{"origin": {"x": 1}, "path": [[2, 3]]}"#,
            r#"{"origin": {"x": 1}, "path": [], "named": {"a": [4]}}"#,
        ] {
            assert!(serde_json::from_str::<Shape>(array).is_err(), "{array}");
        }
        assert!(serde_json::from_str::<Object<Point>>("[1, 2]").is_err());
        assert!(serde_json::from_str::<Point>("[1, 2]").is_ok(), "what a derived struct does alone");
    }
}

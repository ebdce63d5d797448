//! Reading structs only from JSON objects. A derived `Deserialize` also takes a struct's fields as an array of
//! values (`["quire.thread", 1, ...]`), which the API does not document: the fields of the import formats that
//! hold structs read them through these functions (`#[serde(deserialize_with = "...")]`), which refuse anything
//! but an object, at no cost in memory.

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

/// A count that JSON may write as `335` or `335.0` (JSON Schema's `integer` is any number without a fraction);
/// a fraction, a negative number or one past `u32::MAX` is refused.
pub fn whole<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    let number = f64::deserialize(deserializer)?;
    if number.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&number) {
        Ok(number as u32)
    } else {
        Err(serde::de::Error::custom(format!("{number} is not a whole number from 0 to {}", u32::MAX)))
    }
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

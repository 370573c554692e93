//! Hashing a folded state straight from its `Serialize` impl, without building a JSON tree: the
//! explorer keys every point it reaches, and turning each state into a `serde_json::Value` first
//! was seven tenths of `crumb check`'s time (allocating and freeing the tree).
//!
//! Struct fields whose name the caller lists are left out wherever they appear; the elements of
//! fields listed as unordered are hashed as a multiset (each on its own, the hashes sorted), so
//! two orders of the same elements are one state (a map listed so, as a multiset of entries);
//! strings a renaming lists are hashed as their new names (the symmetry reduction's renaming).

use std::hash::{DefaultHasher, Hash, Hasher};

use serde::ser::{self, Serialize};

/// Which struct fields a hash skips or treats as an unordered collection, and which strings it
/// hashes as others.
#[derive(Clone, Copy)]
pub(crate) struct Rules<'r> {
    pub skip: &'static [&'static str],
    pub(crate) unordered: &'static [&'static str],
    pub(crate) rename: &'r [(String, String)],
}

/// Feed `value` into `hasher` under `rules`.
pub(crate) fn hash_into<T: Serialize + ?Sized>(
    value: &T,
    rules: Rules<'_>,
    hasher: &mut DefaultHasher,
) {
    // Our own serializer never fails; a foreign impl that reports an error only makes the hash
    // coarser (its remaining fields are not fed), never wrong for equal states.
    let _ = value.serialize(HashSer {
        hasher,
        rules,
        unordered: false,
    });
}

/// The error a foreign `Serialize` impl may raise through us.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct HashError(String);

impl ser::Error for HashError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        HashError(msg.to_string())
    }
}

struct HashSer<'h> {
    hasher: &'h mut DefaultHasher,
    rules: Rules<'h>,
    /// The value is a field listed as unordered: a sequence here is hashed as a multiset.
    unordered: bool,
}

impl HashSer<'_> {
    fn tag(self, tag: u8) -> Self {
        tag.hash(self.hasher);
        self
    }
}

/// A sequence, map or struct being hashed. For an unordered sequence, each element's own hash.
struct Compound<'h> {
    hasher: &'h mut DefaultHasher,
    rules: Rules<'h>,
    elements: Option<Vec<u64>>,
    /// An unordered map's entry whose key is hashed and whose value is not yet.
    key: Option<u64>,
}

impl Compound<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) {
        let rules = self.rules;
        if let Some(elements) = &mut self.elements {
            let mut own = DefaultHasher::new();
            hash_into(value, rules, &mut own);
            elements.push(own.finish());
        } else {
            self.ordered(value);
        }
    }

    fn ordered<T: Serialize + ?Sized>(&mut self, value: &T) {
        let _ = value.serialize(HashSer {
            hasher: self.hasher,
            rules: self.rules,
            unordered: false,
        });
    }

    /// One entry of a map: in an unordered map the key and value hash as one element.
    fn entry_part<T: Serialize + ?Sized>(&mut self, value: &T, is_key: bool) {
        if self.elements.is_none() {
            self.ordered(value);
            return;
        }
        let mut own = DefaultHasher::new();
        hash_into(value, self.rules, &mut own);
        if is_key {
            self.key = Some(own.finish());
        } else if let Some(elements) = &mut self.elements {
            self.key.take().hash(&mut own);
            elements.push(own.finish());
        }
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) {
        if self.rules.skip.contains(&key) {
            return;
        }
        key.hash(self.hasher);
        let _ = value.serialize(HashSer {
            hasher: self.hasher,
            rules: self.rules,
            unordered: self.rules.unordered.contains(&key),
        });
    }

    fn finish(self) {
        if let Some(mut elements) = self.elements {
            elements.sort_unstable();
            elements.hash(self.hasher);
        }
        // The end of a compound, so `[a], b` and `[a, b]` differ.
        0xffu8.hash(self.hasher);
    }
}

impl<'h> ser::Serializer for HashSer<'h> {
    type Ok = ();
    type Error = HashError;
    type SerializeSeq = Compound<'h>;
    type SerializeTuple = Compound<'h>;
    type SerializeTupleStruct = Compound<'h>;
    type SerializeTupleVariant = Compound<'h>;
    type SerializeMap = Compound<'h>;
    type SerializeStruct = Compound<'h>;
    type SerializeStructVariant = Compound<'h>;

    fn serialize_bool(self, v: bool) -> Result<(), HashError> {
        self.tag(1).hasher.write_u8(u8::from(v));
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), HashError> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i16(self, v: i16) -> Result<(), HashError> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i32(self, v: i32) -> Result<(), HashError> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i64(self, v: i64) -> Result<(), HashError> {
        self.tag(2).hasher.write_i64(v);
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Result<(), HashError> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u16(self, v: u16) -> Result<(), HashError> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u32(self, v: u32) -> Result<(), HashError> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u64(self, v: u64) -> Result<(), HashError> {
        self.tag(3).hasher.write_u64(v);
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<(), HashError> {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), HashError> {
        // 0.0 and -0.0 are one number, as they would be in JSON.
        let v = if v == 0.0 { 0.0 } else { v };
        self.tag(4).hasher.write_u64(v.to_bits());
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), HashError> {
        self.tag(5).hasher.write_u32(u32::from(v));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), HashError> {
        let v = self
            .rules
            .rename
            .iter()
            .find(|(from, _)| from == v)
            .map_or(v, |(_, to)| to.as_str());
        v.hash(self.tag(6).hasher);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), HashError> {
        v.hash(self.tag(7).hasher);
        Ok(())
    }
    fn serialize_none(self) -> Result<(), HashError> {
        self.tag(8);
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), HashError> {
        value.serialize(self.tag(9))
    }
    fn serialize_unit(self) -> Result<(), HashError> {
        self.tag(10);
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), HashError> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
    ) -> Result<(), HashError> {
        self.tag(11).hasher.write_u32(index);
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), HashError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        value: &T,
    ) -> Result<(), HashError> {
        let this = self.tag(12);
        this.hasher.write_u32(index);
        value.serialize(this)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'h>, HashError> {
        let unordered = self.unordered;
        let this = self.tag(13);
        Ok(Compound {
            hasher: this.hasher,
            rules: this.rules,
            elements: unordered.then(Vec::new),
            key: None,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Compound<'h>, HashError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Compound<'h>, HashError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'h>, HashError> {
        let this = self.tag(14);
        this.hasher.write_u32(index);
        Ok(Compound {
            hasher: this.hasher,
            rules: this.rules,
            elements: None,
            key: None,
        })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'h>, HashError> {
        let unordered = self.unordered;
        let this = self.tag(15);
        Ok(Compound {
            hasher: this.hasher,
            rules: this.rules,
            elements: unordered.then(Vec::new),
            key: None,
        })
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Compound<'h>, HashError> {
        let this = self.tag(16);
        Ok(Compound {
            hasher: this.hasher,
            rules: this.rules,
            elements: None,
            key: None,
        })
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'h>, HashError> {
        let this = self.tag(17);
        this.hasher.write_u32(index);
        Ok(Compound {
            hasher: this.hasher,
            rules: this.rules,
            elements: None,
            key: None,
        })
    }
}

/// The sequence-like compounds: each element (or tuple field) in turn.
macro_rules! elements {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = HashError;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), HashError> {
                self.element(value);
                Ok(())
            }
            fn end(self) -> Result<(), HashError> {
                self.finish();
                Ok(())
            }
        }
    )*};
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = HashError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), HashError> {
        self.entry_part(key, true);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), HashError> {
        self.entry_part(value, false);
        Ok(())
    }
    fn end(self) -> Result<(), HashError> {
        self.finish();
        Ok(())
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = HashError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), HashError> {
        self.field(key, value);
        Ok(())
    }
    fn skip_field(&mut self, _key: &'static str) -> Result<(), HashError> {
        Ok(())
    }
    fn end(self) -> Result<(), HashError> {
        self.finish();
        Ok(())
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = HashError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), HashError> {
        self.field(key, value);
        Ok(())
    }
    fn end(self) -> Result<(), HashError> {
        self.finish();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    #[derive(Serialize)]
    struct Inner {
        id: String,
        role: String,
        score: f64,
    }

    #[derive(Serialize)]
    struct Outer {
        name: String,
        results: Vec<Inner>,
        list: Vec<u32>,
        maybe: Option<u32>,
    }

    const RULES: Rules<'static> = Rules {
        skip: &["id"],
        unordered: &["results"],
        rename: &[],
    };

    fn hash(value: &impl Serialize) -> u64 {
        let mut hasher = DefaultHasher::new();
        hash_into(value, RULES, &mut hasher);
        hasher.finish()
    }

    fn inner(id: &str, role: &str, score: f64) -> Inner {
        Inner {
            id: id.into(),
            role: role.into(),
            score,
        }
    }

    fn outer(results: Vec<Inner>, list: Vec<u32>, maybe: Option<u32>) -> Outer {
        Outer {
            name: "n".into(),
            results,
            list,
            maybe,
        }
    }

    #[test]
    fn skipped_fields_and_the_order_of_unordered_ones_do_not_count() {
        let a = outer(
            vec![inner("1", "a", 1.0), inner("2", "b", 2.0)],
            vec![1],
            None,
        );
        let b = outer(
            vec![inner("9", "b", 2.0), inner("8", "a", 1.0)],
            vec![1],
            None,
        );
        assert_eq!(hash(&a), hash(&b));
    }

    #[test]
    fn everything_else_counts() {
        let base = || outer(vec![inner("1", "a", 1.0)], vec![1, 2], None);
        let h = hash(&base());
        assert_ne!(
            h,
            hash(&outer(vec![inner("1", "a", 1.5)], vec![1, 2], None))
        );
        assert_ne!(
            h,
            hash(&outer(vec![inner("1", "b", 1.0)], vec![1, 2], None))
        );
        assert_ne!(
            h,
            hash(&outer(vec![inner("1", "a", 1.0)], vec![2, 1], None))
        );
        assert_ne!(
            h,
            hash(&outer(vec![inner("1", "a", 1.0)], vec![1, 2], Some(0)))
        );
        assert_ne!(h, hash(&outer(vec![], vec![1, 2], None)));
        assert_ne!(
            hash(&outer(vec![], vec![1], Some(2))),
            hash(&outer(vec![], vec![1, 2], None))
        );
    }
}

//! Typed composite row keys and salting: the seeds' row-key design, declared
//! in the schema instead of hand-built by every caller.
//!
//! A key is a tuple of fields; its encoding sorts bytewise exactly as the
//! tuples sort field by field:
//!
//! | type | `asc` encoding |
//! |---|---|
//! | `u8 u16 u32 u64` | big-endian, fixed width |
//! | `i32 i64` | big-endian with the sign bit flipped |
//! | `string bytes` | each 0x00 written `00 FF`, then the terminator `00 01` |
//!
//! A `desc` field is its `asc` encoding with every bit inverted. That reverses
//! the order because every field encoding is prefix-free: two encodings differ
//! at some byte before either ends. Salting prepends one byte, a CRC-32 of the
//! unsalted key modulo `salt_buckets`; the store adds and strips it, so a
//! salted table is read and written with unsalted keys.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{ErrorKind, Result};

/// Most salt buckets: the bucket is one byte.
pub const MAX_SALT_BUCKETS: u16 = 256;

/// A key field's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum KeyType {
    U8,
    U16,
    U32,
    U64,
    I32,
    I64,
    String,
    Bytes,
}

impl KeyType {
    fn name(self) -> &'static str {
        match self {
            KeyType::U8 => "u8",
            KeyType::U16 => "u16",
            KeyType::U32 => "u32",
            KeyType::U64 => "u64",
            KeyType::I32 => "i32",
            KeyType::I64 => "i64",
            KeyType::String => "string",
            KeyType::Bytes => "bytes",
        }
    }
}

/// Sort direction of a key field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyOrder {
    /// Ascending (the default).
    #[default]
    Asc,
    /// Descending: newest-first timestamps without `MAX - ts` arithmetic.
    Desc,
}

/// One field of a typed row key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyField {
    /// The field's name.
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: KeyType,
    /// Its order.
    #[serde(default)]
    pub order: KeyOrder,
}

impl KeyField {
    /// A field.
    pub fn new(name: impl Into<String>, kind: KeyType, order: KeyOrder) -> KeyField {
        KeyField { name: name.into(), kind, order }
    }
}

/// A table's row-key declaration: typed fields and salting.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowKeySchema {
    /// The fields, most significant first. Empty: keys are raw bytes.
    #[serde(default)]
    pub fields: Vec<KeyField>,
    /// Salt buckets; 0 or 1 means unsalted.
    #[serde(default)]
    pub salt_buckets: u16,
}

/// The value of one key field.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(untagged)]
#[allow(missing_docs)]
pub enum KeyValue {
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    I32(i32),
    I64(i64),
    String(String),
    Bytes(Vec<u8>),
}

impl KeyValue {
    /// The type of this value.
    pub fn kind(&self) -> KeyType {
        match self {
            KeyValue::U8(_) => KeyType::U8,
            KeyValue::U16(_) => KeyType::U16,
            KeyValue::U32(_) => KeyType::U32,
            KeyValue::U64(_) => KeyType::U64,
            KeyValue::I32(_) => KeyType::I32,
            KeyValue::I64(_) => KeyType::I64,
            KeyValue::String(_) => KeyType::String,
            KeyValue::Bytes(_) => KeyType::Bytes,
        }
    }
}

impl fmt::Display for KeyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyValue::U8(v) => write!(f, "{v}"),
            KeyValue::U16(v) => write!(f, "{v}"),
            KeyValue::U32(v) => write!(f, "{v}"),
            KeyValue::U64(v) => write!(f, "{v}"),
            KeyValue::I32(v) => write!(f, "{v}"),
            KeyValue::I64(v) => write!(f, "{v}"),
            KeyValue::String(v) => write!(f, "{v:?}"),
            KeyValue::Bytes(v) => write!(f, "{}", crate::error::preview(v)),
        }
    }
}

fn invalid_key(detail: String) -> crate::Error {
    ErrorKind::InvalidRowKey { detail }.into()
}

impl RowKeySchema {
    /// A typed key with these fields, unsalted.
    pub fn new(fields: impl IntoIterator<Item = KeyField>) -> RowKeySchema {
        RowKeySchema { fields: fields.into_iter().collect(), salt_buckets: 0 }
    }

    /// Sets the salt buckets.
    pub fn salted(mut self, buckets: u16) -> RowKeySchema {
        self.salt_buckets = buckets;
        self
    }

    pub(crate) fn validate(&self) -> std::result::Result<(), String> {
        if self.salt_buckets > MAX_SALT_BUCKETS {
            return Err(format!("salt_buckets is {}, at most {MAX_SALT_BUCKETS}", self.salt_buckets));
        }
        let mut names = std::collections::BTreeSet::new();
        for field in &self.fields {
            if field.name.is_empty() {
                return Err("a row_key field has an empty name".into());
            }
            if !names.insert(field.name.as_str()) {
                return Err(format!("row_key field {:?} is declared twice", field.name));
            }
        }
        Ok(())
    }

    /// Whether keys carry a salt byte.
    pub fn is_salted(&self) -> bool {
        self.salt_buckets > 1
    }

    /// Encodes a whole key: one value per field, in field order.
    ///
    /// # Errors
    /// `InvalidRowKey` when the count or a type does not match the schema.
    pub fn encode(&self, values: &[KeyValue]) -> Result<Vec<u8>> {
        if values.len() != self.fields.len() {
            return Err(invalid_key(format!(
                "the key has {} fields, {} given",
                self.fields.len(),
                values.len()
            )));
        }
        self.encode_prefix(values)
    }

    /// Encodes the leading fields of a key: the prefix shared by every key
    /// that starts with these values (for prefix scans).
    ///
    /// # Errors
    /// `InvalidRowKey` when more values than fields are given or a type
    /// does not match.
    pub fn encode_prefix(&self, values: &[KeyValue]) -> Result<Vec<u8>> {
        if values.len() > self.fields.len() {
            return Err(invalid_key(format!(
                "the key has {} fields, {} given",
                self.fields.len(),
                values.len()
            )));
        }
        let mut out = Vec::new();
        for (field, value) in self.fields.iter().zip(values) {
            if field.kind != value.kind() {
                return Err(invalid_key(format!(
                    "field {:?} is {}, got a {} value",
                    field.name,
                    field.kind.name(),
                    value.kind().name()
                )));
            }
            let start = out.len();
            encode_value(&mut out, value);
            if field.order == KeyOrder::Desc {
                out[start..].iter_mut().for_each(|b| *b = !*b);
            }
        }
        Ok(out)
    }

    /// Encodes named values (every field must be named once; unknown names
    /// are an error).
    ///
    /// # Errors
    /// `InvalidRowKey`.
    pub fn encode_named<'a>(&self, values: impl IntoIterator<Item = (&'a str, KeyValue)>) -> Result<Vec<u8>> {
        let ordered = self.order_named(values)?;
        if ordered.len() != self.fields.len() {
            let missing = &self.fields[ordered.len()].name;
            return Err(invalid_key(format!("field {missing:?} is missing")));
        }
        self.encode(&ordered)
    }

    /// Encodes named values of leading fields (a prefix).
    ///
    /// # Errors
    /// `InvalidRowKey`, also when the names are not leading fields.
    pub fn encode_prefix_named<'a>(
        &self,
        values: impl IntoIterator<Item = (&'a str, KeyValue)>,
    ) -> Result<Vec<u8>> {
        let ordered = self.order_named(values)?;
        self.encode_prefix(&ordered)
    }

    /// Values ordered by field, leading fields only, in a gapless run.
    fn order_named<'a>(
        &self,
        values: impl IntoIterator<Item = (&'a str, KeyValue)>,
    ) -> Result<Vec<KeyValue>> {
        let mut slots: Vec<Option<KeyValue>> = vec![None; self.fields.len()];
        for (name, value) in values {
            let index = self
                .fields
                .iter()
                .position(|f| f.name == name)
                .ok_or_else(|| invalid_key(format!("no key field named {name:?}")))?;
            if slots[index].replace(value).is_some() {
                return Err(invalid_key(format!("field {name:?} given twice")));
            }
        }
        let given = slots.iter().take_while(|s| s.is_some()).count();
        if let Some(gap) = slots[given..].iter().position(Option::is_some) {
            return Err(invalid_key(format!(
                "field {:?} is given but the earlier field {:?} is not",
                self.fields[given + gap].name,
                self.fields[given].name
            )));
        }
        Ok(slots.into_iter().flatten().collect())
    }

    /// Decodes an unsalted key into its field values.
    ///
    /// # Errors
    /// `InvalidRowKey` when the bytes are not a key of this schema.
    pub fn decode(&self, key: &[u8]) -> Result<Vec<KeyValue>> {
        let mut rest = key;
        let mut out = Vec::with_capacity(self.fields.len());
        for field in &self.fields {
            let flip = if field.order == KeyOrder::Desc { 0xFF } else { 0x00 };
            let (value, used) = decode_value(field.kind, rest, flip).ok_or_else(|| {
                invalid_key(format!(
                    "bad bytes for field {:?} in key {}",
                    field.name,
                    crate::error::preview(key)
                ))
            })?;
            out.push(value);
            rest = &rest[used..];
        }
        if !rest.is_empty() {
            return Err(invalid_key(format!("{} bytes after the last field", rest.len())));
        }
        Ok(out)
    }

    /// Decodes into (field name, value) pairs.
    ///
    /// # Errors
    /// As [`RowKeySchema::decode`].
    pub fn decode_named(&self, key: &[u8]) -> Result<Vec<(String, KeyValue)>> {
        Ok(self.fields.iter().map(|f| f.name.clone()).zip(self.decode(key)?).collect())
    }

    /// The salt bucket of an unsalted key (0 when unsalted).
    pub fn bucket(&self, key: &[u8]) -> u8 {
        if !self.is_salted() {
            return 0;
        }
        let bucket = crc32fast::hash(key) % u32::from(self.salt_buckets);
        // Fits: salt_buckets <= 256.
        u8::try_from(bucket).unwrap_or(u8::MAX)
    }

    /// The stored key: the salt byte (when salted) and the key.
    pub fn salt(&self, key: &[u8]) -> Vec<u8> {
        if !self.is_salted() {
            return key.to_vec();
        }
        super::salt::salted(self.bucket(key), key)
    }
}

fn encode_value(out: &mut Vec<u8>, value: &KeyValue) {
    match value {
        KeyValue::U8(v) => out.push(*v),
        KeyValue::U16(v) => out.extend_from_slice(&v.to_be_bytes()),
        KeyValue::U32(v) => out.extend_from_slice(&v.to_be_bytes()),
        KeyValue::U64(v) => out.extend_from_slice(&v.to_be_bytes()),
        KeyValue::I32(v) => out.extend_from_slice(&(v.cast_unsigned() ^ (1 << 31)).to_be_bytes()),
        KeyValue::I64(v) => out.extend_from_slice(&(v.cast_unsigned() ^ (1 << 63)).to_be_bytes()),
        KeyValue::String(v) => crate::key::push_escaped(out, v.as_bytes()),
        KeyValue::Bytes(v) => crate::key::push_escaped(out, v),
    }
}

/// Decodes one field from the start of `input` (bytes XORed with `flip`);
/// returns the value and the bytes used.
fn decode_value(kind: KeyType, input: &[u8], flip: u8) -> Option<(KeyValue, usize)> {
    fn fixed<const N: usize>(input: &[u8], flip: u8) -> Option<[u8; N]> {
        let mut out: [u8; N] = input.get(..N)?.try_into().ok()?;
        out.iter_mut().for_each(|b| *b ^= flip);
        Some(out)
    }
    Some(match kind {
        KeyType::U8 => (KeyValue::U8(fixed::<1>(input, flip)?[0]), 1),
        KeyType::U16 => (KeyValue::U16(u16::from_be_bytes(fixed(input, flip)?)), 2),
        KeyType::U32 => (KeyValue::U32(u32::from_be_bytes(fixed(input, flip)?)), 4),
        KeyType::U64 => (KeyValue::U64(u64::from_be_bytes(fixed(input, flip)?)), 8),
        KeyType::I32 => {
            (KeyValue::I32((u32::from_be_bytes(fixed(input, flip)?) ^ (1 << 31)).cast_signed()), 4)
        }
        KeyType::I64 => {
            (KeyValue::I64((u64::from_be_bytes(fixed(input, flip)?) ^ (1 << 63)).cast_signed()), 8)
        }
        KeyType::String | KeyType::Bytes => {
            let mut bytes = Vec::new();
            let mut i = 0;
            loop {
                let b = *input.get(i)? ^ flip;
                if b != 0 {
                    bytes.push(b);
                    i += 1;
                    continue;
                }
                match *input.get(i + 1)? ^ flip {
                    0x01 => break,
                    0xFF => bytes.push(0),
                    _ => return None,
                }
                i += 2;
            }
            let value = if kind == KeyType::String {
                KeyValue::String(String::from_utf8(bytes).ok()?)
            } else {
                KeyValue::Bytes(bytes)
            };
            (value, i + 2)
        }
    })
}

/// Compares two tuples the way their encodings compare (field by field,
/// `desc` fields reversed). For tests and models.
pub fn compare_tuples(fields: &[KeyField], a: &[KeyValue], b: &[KeyValue]) -> Ordering {
    for ((field, x), y) in fields.iter().zip(a).zip(b) {
        let ord = x.cmp(y);
        let ord = if field.order == KeyOrder::Desc { ord.reverse() } else { ord };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    a.len().cmp(&b.len())
}

impl KeyValue {
    /// The value as JSON: integers as numbers, strings as strings, bytes as
    /// binary strings (API.md's `key_fields`).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            KeyValue::U8(v) => (*v).into(),
            KeyValue::U16(v) => (*v).into(),
            KeyValue::U32(v) => (*v).into(),
            KeyValue::U64(v) => (*v).into(),
            KeyValue::I32(v) => (*v).into(),
            KeyValue::I64(v) => (*v).into(),
            KeyValue::String(v) => v.clone().into(),
            KeyValue::Bytes(v) => crate::binstr::encode(v).into(),
        }
    }

    /// Reads a JSON value as a value of type `kind`.
    ///
    /// # Errors
    /// `InvalidRowKey` when the JSON does not fit the type.
    pub fn from_json(kind: KeyType, field: &str, json: &serde_json::Value) -> Result<KeyValue> {
        let mismatch = || invalid_key(format!("field {field:?} is {}, got {json}", kind.name()));
        let int = |json: &serde_json::Value| json.as_i64().map(i128::from).or(json.as_u64().map(i128::from));
        Ok(match kind {
            KeyType::U8 => KeyValue::U8(int(json).and_then(|v| v.try_into().ok()).ok_or_else(mismatch)?),
            KeyType::U16 => KeyValue::U16(int(json).and_then(|v| v.try_into().ok()).ok_or_else(mismatch)?),
            KeyType::U32 => KeyValue::U32(int(json).and_then(|v| v.try_into().ok()).ok_or_else(mismatch)?),
            KeyType::U64 => KeyValue::U64(int(json).and_then(|v| v.try_into().ok()).ok_or_else(mismatch)?),
            KeyType::I32 => KeyValue::I32(int(json).and_then(|v| v.try_into().ok()).ok_or_else(mismatch)?),
            KeyType::I64 => KeyValue::I64(int(json).and_then(|v| v.try_into().ok()).ok_or_else(mismatch)?),
            KeyType::String => KeyValue::String(json.as_str().ok_or_else(mismatch)?.to_owned()),
            KeyType::Bytes => {
                let text = json.as_str().ok_or_else(mismatch)?;
                KeyValue::Bytes(
                    crate::binstr::decode(text).map_err(|e| invalid_key(format!("field {field:?}: {e}")))?,
                )
            }
        })
    }
}

impl RowKeySchema {
    /// Encodes a JSON object of leading fields (`{"user": "ann"}`) as a key
    /// prefix; with every field given it is the whole key.
    ///
    /// ```
    /// use rowsearch_store::{KeyField, KeyOrder, KeyType, RowKeySchema};
    /// let schema = RowKeySchema::new([
    ///     KeyField::new("user", KeyType::String, KeyOrder::Asc),
    ///     KeyField::new("date", KeyType::U64, KeyOrder::Desc),
    /// ]);
    /// let key = schema.encode_json(&serde_json::json!({"user": "ann", "date": 5})).unwrap();
    /// assert_eq!(schema.decode_json(&key).unwrap(), serde_json::json!({"user": "ann", "date": 5}));
    /// assert!(schema.encode_json(&serde_json::json!({"date": 5})).is_err());
    /// ```
    ///
    /// # Errors
    /// `InvalidRowKey` for anything but an object of leading fields with
    /// values of their types.
    pub fn encode_json(&self, json: &serde_json::Value) -> Result<Vec<u8>> {
        let object = json
            .as_object()
            .ok_or_else(|| invalid_key(format!("expected a JSON object of key fields, got {json}")))?;
        let mut values = Vec::with_capacity(object.len());
        for (name, value) in object {
            let field = self
                .fields
                .iter()
                .find(|f| f.name == *name)
                .ok_or_else(|| invalid_key(format!("no key field named {name:?}")))?;
            values.push((name.as_str(), KeyValue::from_json(field.kind, name, value)?));
        }
        self.encode_prefix_named(values)
    }

    /// Decodes an unsalted key into a JSON object of its fields.
    ///
    /// # Errors
    /// As [`RowKeySchema::decode`].
    pub fn decode_json(&self, key: &[u8]) -> Result<serde_json::Value> {
        let values = self.decode(key)?;
        let object: serde_json::Map<String, serde_json::Value> =
            self.fields.iter().zip(values).map(|(f, v)| (f.name.clone(), v.to_json())).collect();
        Ok(serde_json::Value::Object(object))
    }
}

//! Thrift's wire formats, the one owner of their bytes: messages and
//! values in the binary protocol (strict, as HBase's gateway and happybase
//! write it) and the compact protocol, decoded into a generic [`Value`]
//! and encoded back. The service layer reads arguments out of a decoded
//! struct by field id and builds replies as structs, so no byte layout
//! lives anywhere else.
//!
//! Decoding never panics and never allocates past what the input holds:
//! every length is checked against the bytes left before anything is
//! reserved, nesting is bounded ([`Limits::max_depth`]), and a message
//! larger than [`Limits::max_message_bytes`] is refused. On a stream
//! (the buffered transport), a message cut short is
//! [`DecodeError::Incomplete`]: read more and decode again.

use std::fmt;
use std::sync::Arc;

/// Thrift's type ids (the binary protocol's numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TType {
    Bool,
    Byte,
    Double,
    I16,
    I32,
    I64,
    Binary,
    Struct,
    Map,
    Set,
    List,
}

impl TType {
    /// The binary protocol's id.
    fn binary_id(self) -> u8 {
        match self {
            TType::Bool => 2,
            TType::Byte => 3,
            TType::Double => 4,
            TType::I16 => 6,
            TType::I32 => 8,
            TType::I64 => 10,
            TType::Binary => 11,
            TType::Struct => 12,
            TType::Map => 13,
            TType::Set => 14,
            TType::List => 15,
        }
    }

    fn from_binary_id(id: u8) -> Option<TType> {
        Some(match id {
            2 => TType::Bool,
            3 => TType::Byte,
            4 => TType::Double,
            6 => TType::I16,
            8 => TType::I32,
            10 => TType::I64,
            11 => TType::Binary,
            12 => TType::Struct,
            13 => TType::Map,
            14 => TType::Set,
            15 => TType::List,
            _ => return None,
        })
    }

    /// The compact protocol's id (in a container header, where a bool is 1).
    fn compact_id(self) -> u8 {
        match self {
            TType::Bool => 1,
            TType::Byte => 3,
            TType::I16 => 4,
            TType::I32 => 5,
            TType::I64 => 6,
            TType::Double => 7,
            TType::Binary => 8,
            TType::List => 9,
            TType::Set => 10,
            TType::Map => 11,
            TType::Struct => 12,
        }
    }

    fn from_compact_id(id: u8) -> Option<TType> {
        Some(match id {
            1 | 2 => TType::Bool,
            3 => TType::Byte,
            4 => TType::I16,
            5 => TType::I32,
            6 => TType::I64,
            7 => TType::Double,
            8 => TType::Binary,
            9 => TType::List,
            10 => TType::Set,
            11 => TType::Map,
            12 => TType::Struct,
            _ => return None,
        })
    }
}

/// A Thrift value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    Byte(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    Double(f64),
    /// `binary` and `string` alike (a string is UTF-8 by convention).
    Binary(Vec<u8>),
    /// Fields by id, in the order read or to write.
    Struct(Vec<(i16, Value)>),
    Map {
        key: TType,
        value: TType,
        entries: Vec<(Value, Value)>,
    },
    Set {
        elem: TType,
        items: Vec<Value>,
    },
    List {
        elem: TType,
        items: Vec<Value>,
    },
    /// A value that writes itself when the message is encoded (replies
    /// only: decoding never makes one).
    Encoded(Encoded),
}

impl Value {
    /// Its type.
    pub fn ttype(&self) -> TType {
        match self {
            Value::Bool(_) => TType::Bool,
            Value::Byte(_) => TType::Byte,
            Value::I16(_) => TType::I16,
            Value::I32(_) => TType::I32,
            Value::I64(_) => TType::I64,
            Value::Double(_) => TType::Double,
            Value::Binary(_) => TType::Binary,
            Value::Struct(_) => TType::Struct,
            Value::Map { .. } => TType::Map,
            Value::Set { .. } => TType::Set,
            Value::List { .. } => TType::List,
            Value::Encoded(e) => e.0.ttype(),
        }
    }

    /// Field `id` of a struct.
    pub fn field(&self, id: i16) -> Option<&Value> {
        match self {
            Value::Struct(fields) => fields.iter().find(|(f, _)| *f == id).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// What a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageType {
    Call,
    Reply,
    Exception,
    Oneway,
}

impl MessageType {
    fn id(self) -> u8 {
        match self {
            MessageType::Call => 1,
            MessageType::Reply => 2,
            MessageType::Exception => 3,
            MessageType::Oneway => 4,
        }
    }

    fn from_id(id: u8) -> Option<MessageType> {
        Some(match id {
            1 => MessageType::Call,
            2 => MessageType::Reply,
            3 => MessageType::Exception,
            4 => MessageType::Oneway,
            _ => return None,
        })
    }
}

/// One message: a call's arguments or a reply's result, as a struct.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub name: String,
    pub kind: MessageType,
    pub seq: i32,
    pub body: Value,
}

/// The two protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Binary,
    Compact,
}

impl Protocol {
    /// The protocol a message starting with `first` is written in.
    pub fn detect(first: u8) -> Option<Protocol> {
        match first {
            0x80 => Some(Protocol::Binary),
            0x82 => Some(Protocol::Compact),
            _ => None,
        }
    }
}

/// Bounds on what one message may hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Nesting of structs and containers.
    pub max_depth: usize,
    /// Bytes of one message.
    pub max_message_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_depth: 32, max_message_bytes: 16 << 20 }
    }
}

/// Why bytes do not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The bytes end before the message does (a stream: read more).
    Incomplete,
    /// The bytes are not a message of the protocol.
    Invalid(String),
    /// The message is past a limit.
    TooLarge(String),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Incomplete => write!(f, "the message is cut short"),
            DecodeError::Invalid(why) => write!(f, "malformed message: {why}"),
            DecodeError::TooLarge(why) => write!(f, "message too large: {why}"),
        }
    }
}

impl std::error::Error for DecodeError {}

type Decoded<T> = Result<T, DecodeError>;

fn invalid<T>(why: impl Into<String>) -> Decoded<T> {
    Err(DecodeError::Invalid(why.into()))
}

/// Decodes one message from the start of `bytes`: the message and how many
/// bytes it took.
///
/// # Errors
/// [`DecodeError`].
pub fn decode(protocol: Protocol, bytes: &[u8], limits: &Limits) -> Decoded<(Message, usize)> {
    let mut reader = Reader { bytes, at: 0, limits, depth: 0 };
    let message = match protocol {
        Protocol::Binary => reader.binary_message(),
        Protocol::Compact => reader.compact_message(),
    };
    match message {
        // Cut short past the limit: it would never fit.
        Err(DecodeError::Incomplete) if bytes.len() >= limits.max_message_bytes => {
            Err(DecodeError::TooLarge(format!("more than {} bytes", limits.max_message_bytes)))
        }
        Ok(_) if reader.at > limits.max_message_bytes => {
            Err(DecodeError::TooLarge(format!("{} bytes, at most {}", reader.at, limits.max_message_bytes)))
        }
        Ok(message) => Ok((message, reader.at)),
        Err(e) => Err(e),
    }
}

/// Encodes `message`.
pub fn encode(protocol: Protocol, message: &Message) -> Vec<u8> {
    let mut writer = Writer { out: Vec::new(), last_field: Vec::new() };
    match protocol {
        Protocol::Binary => writer.binary_message(message),
        Protocol::Compact => writer.compact_message(message),
    }
    writer.out
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    limits: &'a Limits,
    depth: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Decoded<&[u8]> {
        let end = self.at.checked_add(n).ok_or(DecodeError::Incomplete)?;
        if end > self.bytes.len() {
            return Err(if end > self.limits.max_message_bytes {
                DecodeError::TooLarge(format!("a length of {n} bytes"))
            } else {
                DecodeError::Incomplete
            });
        }
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn byte(&mut self) -> Decoded<u8> {
        Ok(self.take(1)?[0])
    }

    fn array<const N: usize>(&mut self) -> Decoded<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// A count of items each at least `min_item` bytes long: refused when
    /// the message could not hold them (so nothing is reserved for them).
    fn count(&mut self, n: i64, min_item: usize) -> Decoded<usize> {
        let n = usize::try_from(n).map_err(|_| DecodeError::Invalid(format!("negative size {n}")))?;
        let need = n.saturating_mul(min_item.max(1));
        if need > self.limits.max_message_bytes {
            return Err(DecodeError::TooLarge(format!("{n} items")));
        }
        if self.at.saturating_add(need) > self.bytes.len() {
            return Err(DecodeError::Incomplete);
        }
        Ok(n)
    }

    fn nest(&mut self) -> Decoded<()> {
        self.depth += 1;
        if self.depth > self.limits.max_depth {
            return Err(DecodeError::TooLarge(format!("nested deeper than {}", self.limits.max_depth)));
        }
        Ok(())
    }

    // The binary protocol.

    fn binary_message(&mut self) -> Decoded<Message> {
        let head = i32::from_be_bytes(self.array()?);
        // Strict: 0x8001 version, then the type in the low byte.
        if (head as u32) & 0xffff_0000 != 0x8001_0000 {
            return invalid(format!("not a strict binary-protocol message (header {:#010x})", head as u32));
        }
        let kind = MessageType::from_id(head as u8).map_or_else(|| invalid("unknown message type"), Ok)?;
        let name = self.binary_bytes()?;
        let name = String::from_utf8(name).or_else(|_| invalid("method name is not UTF-8"))?;
        let seq = i32::from_be_bytes(self.array()?);
        let body = self.binary_struct()?;
        Ok(Message { name, kind, seq, body })
    }

    fn binary_bytes(&mut self) -> Decoded<Vec<u8>> {
        let len = i32::from_be_bytes(self.array()?);
        let len = self.count(i64::from(len), 1)?;
        Ok(self.take(len)?.to_vec())
    }

    fn binary_type(&mut self) -> Decoded<TType> {
        let id = self.byte()?;
        TType::from_binary_id(id).map_or_else(|| invalid(format!("unknown type id {id}")), Ok)
    }

    fn binary_struct(&mut self) -> Decoded<Value> {
        self.nest()?;
        let mut fields = Vec::new();
        loop {
            let id = self.byte()?;
            if id == 0 {
                break;
            }
            let ttype =
                TType::from_binary_id(id).map_or_else(|| invalid(format!("unknown type id {id}")), Ok)?;
            let field = i16::from_be_bytes(self.array()?);
            fields.push((field, self.binary_value(ttype)?));
        }
        self.depth -= 1;
        Ok(Value::Struct(fields))
    }

    fn binary_value(&mut self, ttype: TType) -> Decoded<Value> {
        Ok(match ttype {
            TType::Bool => Value::Bool(self.byte()? != 0),
            TType::Byte => Value::Byte(self.byte()? as i8),
            TType::I16 => Value::I16(i16::from_be_bytes(self.array()?)),
            TType::I32 => Value::I32(i32::from_be_bytes(self.array()?)),
            TType::I64 => Value::I64(i64::from_be_bytes(self.array()?)),
            TType::Double => Value::Double(f64::from_be_bytes(self.array()?)),
            TType::Binary => Value::Binary(self.binary_bytes()?),
            TType::Struct => self.binary_struct()?,
            TType::Map => {
                self.nest()?;
                let (key, value) = (self.binary_type()?, self.binary_type()?);
                let n = i32::from_be_bytes(self.array()?);
                let n = self.count(i64::from(n), 2)?;
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    entries.push((self.binary_value(key)?, self.binary_value(value)?));
                }
                self.depth -= 1;
                Value::Map { key, value, entries }
            }
            TType::Set | TType::List => {
                self.nest()?;
                let elem = self.binary_type()?;
                let n = i32::from_be_bytes(self.array()?);
                let n = self.count(i64::from(n), 1)?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.binary_value(elem)?);
                }
                self.depth -= 1;
                if ttype == TType::Set { Value::Set { elem, items } } else { Value::List { elem, items } }
            }
        })
    }

    // The compact protocol.

    fn varint(&mut self) -> Decoded<u64> {
        let mut out = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return invalid("varint past 64 bits");
            }
            out |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        invalid("varint past 10 bytes")
    }

    fn zigzag(&mut self) -> Decoded<i64> {
        let n = self.varint()?;
        Ok((n >> 1) as i64 ^ -((n & 1) as i64))
    }

    fn compact_i16(&mut self) -> Decoded<i16> {
        let n = self.zigzag()?;
        i16::try_from(n).map_or_else(|_| invalid(format!("{n} is not an i16")), Ok)
    }

    fn compact_i32(&mut self) -> Decoded<i32> {
        let n = self.zigzag()?;
        i32::try_from(n).map_or_else(|_| invalid(format!("{n} is not an i32")), Ok)
    }

    fn compact_message(&mut self) -> Decoded<Message> {
        if self.byte()? != 0x82 {
            return invalid("not a compact-protocol message");
        }
        let version_and_type = self.byte()?;
        if version_and_type & 0x1f != 1 {
            return invalid(format!("compact protocol version {}", version_and_type & 0x1f));
        }
        let kind = MessageType::from_id(version_and_type >> 5)
            .map_or_else(|| invalid("unknown message type"), Ok)?;
        let seq = self.varint()? as u32 as i32;
        let name = self.compact_bytes()?;
        let name = String::from_utf8(name).or_else(|_| invalid("method name is not UTF-8"))?;
        let body = self.compact_struct()?;
        Ok(Message { name, kind, seq, body })
    }

    fn compact_bytes(&mut self) -> Decoded<Vec<u8>> {
        let len = self.varint()?;
        let len = self.count(i64::try_from(len).unwrap_or(i64::MAX), 1)?;
        Ok(self.take(len)?.to_vec())
    }

    fn compact_type(&mut self, id: u8) -> Decoded<TType> {
        TType::from_compact_id(id).map_or_else(|| invalid(format!("unknown compact type id {id}")), Ok)
    }

    fn compact_struct(&mut self) -> Decoded<Value> {
        self.nest()?;
        let mut fields = Vec::new();
        let mut last: i16 = 0;
        loop {
            let head = self.byte()?;
            if head == 0 {
                break;
            }
            let (delta, type_id) = (head >> 4, head & 0x0f);
            let ttype = self.compact_type(type_id)?;
            let id = if delta == 0 { self.compact_i16()? } else { last.wrapping_add(i16::from(delta)) };
            last = id;
            let value = match (ttype, type_id) {
                // A bool field's value is its type id.
                (TType::Bool, id) => Value::Bool(id == 1),
                (ttype, _) => self.compact_value(ttype)?,
            };
            fields.push((id, value));
        }
        self.depth -= 1;
        Ok(Value::Struct(fields))
    }

    fn compact_value(&mut self, ttype: TType) -> Decoded<Value> {
        Ok(match ttype {
            TType::Bool => Value::Bool(self.byte()? == 1),
            TType::Byte => Value::Byte(self.byte()? as i8),
            TType::I16 => Value::I16(self.compact_i16()?),
            TType::I32 => Value::I32(self.compact_i32()?),
            TType::I64 => Value::I64(self.zigzag()?),
            TType::Double => Value::Double(f64::from_le_bytes(self.array()?)),
            TType::Binary => Value::Binary(self.compact_bytes()?),
            TType::Struct => self.compact_struct()?,
            TType::Map => {
                self.nest()?;
                let n = self.varint()?;
                let (key, value, n) = if n == 0 {
                    (TType::Binary, TType::Binary, 0)
                } else {
                    let types = self.byte()?;
                    let key = self.compact_type(types >> 4)?;
                    let value = self.compact_type(types & 0x0f)?;
                    (key, value, self.count(i64::try_from(n).unwrap_or(i64::MAX), 2)?)
                };
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    entries.push((self.compact_value(key)?, self.compact_value(value)?));
                }
                self.depth -= 1;
                Value::Map { key, value, entries }
            }
            TType::Set | TType::List => {
                self.nest()?;
                let head = self.byte()?;
                let elem = self.compact_type(head & 0x0f)?;
                let n = if head >> 4 == 0x0f { self.varint()? } else { u64::from(head >> 4) };
                let n = self.count(i64::try_from(n).unwrap_or(i64::MAX), 1)?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.compact_value(elem)?);
                }
                self.depth -= 1;
                if ttype == TType::Set { Value::Set { elem, items } } else { Value::List { elem, items } }
            }
        })
    }
}

struct Writer {
    out: Vec<u8>,
    /// The last field id written, per struct being written (compact).
    last_field: Vec<i16>,
}

impl Writer {
    // The binary protocol.

    fn binary_message(&mut self, m: &Message) {
        self.out.extend_from_slice(&(0x8001_0000u32 | u32::from(m.kind.id())).to_be_bytes());
        self.binary_bytes(m.name.as_bytes());
        self.out.extend_from_slice(&m.seq.to_be_bytes());
        self.binary_value(&m.body);
    }

    fn binary_bytes(&mut self, b: &[u8]) {
        self.out.extend_from_slice(&(b.len() as i32).to_be_bytes());
        self.out.extend_from_slice(b);
    }

    fn binary_value(&mut self, v: &Value) {
        match v {
            Value::Bool(b) => self.out.push(u8::from(*b)),
            Value::Byte(b) => self.out.push(*b as u8),
            Value::I16(n) => self.out.extend_from_slice(&n.to_be_bytes()),
            Value::I32(n) => self.out.extend_from_slice(&n.to_be_bytes()),
            Value::I64(n) => self.out.extend_from_slice(&n.to_be_bytes()),
            Value::Double(d) => self.out.extend_from_slice(&d.to_be_bytes()),
            Value::Binary(b) => self.binary_bytes(b),
            Value::Encoded(e) => e.0.encode(&mut Encoder { w: self, compact: false }),
            Value::Struct(fields) => {
                for (id, value) in fields {
                    self.out.push(value.ttype().binary_id());
                    self.out.extend_from_slice(&id.to_be_bytes());
                    self.binary_value(value);
                }
                self.out.push(0);
            }
            Value::Map { key, value, entries } => {
                self.out.push(key.binary_id());
                self.out.push(value.binary_id());
                self.out.extend_from_slice(&(entries.len() as i32).to_be_bytes());
                for (k, v) in entries {
                    self.binary_value(k);
                    self.binary_value(v);
                }
            }
            Value::Set { elem, items } | Value::List { elem, items } => {
                self.out.push(elem.binary_id());
                self.out.extend_from_slice(&(items.len() as i32).to_be_bytes());
                for item in items {
                    self.binary_value(item);
                }
            }
        }
    }

    // The compact protocol.

    fn varint(&mut self, mut n: u64) {
        loop {
            if n < 0x80 {
                self.out.push(n as u8);
                return;
            }
            self.out.push((n as u8 & 0x7f) | 0x80);
            n >>= 7;
        }
    }

    fn zigzag(&mut self, n: i64) {
        self.varint(((n << 1) ^ (n >> 63)) as u64);
    }

    fn compact_message(&mut self, m: &Message) {
        self.out.push(0x82);
        self.out.push(1 | (m.kind.id() << 5));
        self.varint(u64::from(m.seq as u32));
        self.compact_bytes(m.name.as_bytes());
        self.compact_value(&m.body);
    }

    /// A field's header: the id as a delta from the last field's where it
    /// fits in four bits.
    fn compact_field_header(&mut self, id: i16, type_id: u8) {
        let last = self.last_field.last().copied().unwrap_or(0);
        let delta = i32::from(id) - i32::from(last);
        if (1..=15).contains(&delta) {
            self.out.push(((delta as u8) << 4) | type_id);
        } else {
            self.out.push(type_id);
            self.zigzag(i64::from(id));
        }
        if let Some(l) = self.last_field.last_mut() {
            *l = id;
        }
    }

    fn compact_list_header(&mut self, elem: TType, len: usize) {
        if len < 15 {
            self.out.push(((len as u8) << 4) | elem.compact_id());
        } else {
            self.out.push(0xf0 | elem.compact_id());
            self.varint(len as u64);
        }
    }

    fn compact_bytes(&mut self, b: &[u8]) {
        self.varint(b.len() as u64);
        self.out.extend_from_slice(b);
    }

    fn compact_value(&mut self, v: &Value) {
        match v {
            Value::Bool(b) => self.out.push(if *b { 1 } else { 2 }),
            Value::Byte(b) => self.out.push(*b as u8),
            Value::I16(n) => self.zigzag(i64::from(*n)),
            Value::I32(n) => self.zigzag(i64::from(*n)),
            Value::I64(n) => self.zigzag(*n),
            Value::Double(d) => self.out.extend_from_slice(&d.to_le_bytes()),
            Value::Binary(b) => self.compact_bytes(b),
            Value::Encoded(e) => e.0.encode(&mut Encoder { w: self, compact: true }),
            Value::Struct(fields) => {
                self.last_field.push(0);
                for (id, value) in fields {
                    let type_id = match value {
                        Value::Bool(b) => {
                            if *b {
                                1
                            } else {
                                2
                            }
                        }
                        other => other.ttype().compact_id(),
                    };
                    self.compact_field_header(*id, type_id);
                    if !matches!(value, Value::Bool(_)) {
                        self.compact_value(value);
                    }
                }
                self.out.push(0);
                self.last_field.pop();
            }
            Value::Map { key, value, entries } => {
                self.varint(entries.len() as u64);
                if !entries.is_empty() {
                    self.out.push((key.compact_id() << 4) | value.compact_id());
                }
                for (k, v) in entries {
                    self.compact_value(k);
                    self.compact_value(v);
                }
            }
            Value::Set { elem, items } | Value::List { elem, items } => {
                self.compact_list_header(*elem, items.len());
                for item in items {
                    self.compact_value(item);
                }
            }
        }
    }
}

// Values written as they are made: a reply too large to build as a tree of
// `Value`s first (a scan's rows: five values and their allocations per
// cell, then as many frees) implements `Encode` and writes itself through an
// `Encoder`, in either protocol, with the same bytes the tree would have
// given (`thrift/results_prop.rs` checks it).

/// A value that writes itself.
pub trait Encode: Send + Sync {
    /// Its type.
    fn ttype(&self) -> TType;
    /// Writes it: exactly one value of [`Self::ttype`].
    fn encode(&self, out: &mut Encoder<'_>);
}

/// A [`Value::Encoded`]'s content (shared, compared by identity).
#[derive(Clone)]
pub struct Encoded(pub Arc<dyn Encode>);

impl fmt::Debug for Encoded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Encoded({:?})", self.0.ttype())
    }
}

impl PartialEq for Encoded {
    fn eq(&self, other: &Encoded) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Writes values in the message's protocol.
pub struct Encoder<'w> {
    w: &'w mut Writer,
    compact: bool,
}

impl Encoder<'_> {
    /// Starts a struct's fields.
    pub fn struct_begin(&mut self) {
        if self.compact {
            self.w.last_field.push(0);
        }
    }

    /// Ends a struct.
    pub fn struct_end(&mut self) {
        self.w.out.push(0);
        if self.compact {
            self.w.last_field.pop();
        }
    }

    /// A field's header (a bool field: [`Self::bool_field`]); its value
    /// follows.
    pub fn field(&mut self, id: i16, ttype: TType) {
        if self.compact {
            self.w.compact_field_header(id, ttype.compact_id());
        } else {
            self.w.out.push(ttype.binary_id());
            self.w.out.extend_from_slice(&id.to_be_bytes());
        }
    }

    /// A bool field, header and value.
    pub fn bool_field(&mut self, id: i16, b: bool) {
        if self.compact {
            self.w.compact_field_header(id, if b { 1 } else { 2 });
        } else {
            self.field(id, TType::Bool);
            self.w.out.push(u8::from(b));
        }
    }

    /// A list's header; `len` values of `elem` follow.
    pub fn list_begin(&mut self, elem: TType, len: usize) {
        if self.compact {
            self.w.compact_list_header(elem, len);
        } else {
            self.w.out.push(elem.binary_id());
            self.w.out.extend_from_slice(&(len as i32).to_be_bytes());
        }
    }

    pub fn binary(&mut self, b: &[u8]) {
        if self.compact { self.w.compact_bytes(b) } else { self.w.binary_bytes(b) }
    }

    pub fn i64(&mut self, n: i64) {
        if self.compact { self.w.zigzag(n) } else { self.w.out.extend_from_slice(&n.to_be_bytes()) }
    }

    pub fn byte(&mut self, b: i8) {
        self.w.out.push(b as u8);
    }

    /// A whole value.
    pub fn value(&mut self, v: &Value) {
        if self.compact { self.w.compact_value(v) } else { self.w.binary_value(v) }
    }
}

#[cfg(test)]
mod tests;

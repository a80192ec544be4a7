//! A small Thrift client for the tests, written apart from the server's
//! codec (an independent reading of the binary protocol): calls encoded
//! by hand, replies decoded into a loose value tree.

use std::io::{Read, Write};
use std::net::TcpStream;

/// A value of a reply.
#[derive(Debug, Clone, PartialEq)]
pub enum V {
    Bool(bool),
    Int(i64),
    Double(f64),
    Bytes(Vec<u8>),
    Struct(Vec<(i16, V)>),
    List(Vec<V>),
    Map(Vec<(V, V)>),
}

impl V {
    pub fn field(&self, id: i16) -> Option<&V> {
        match self {
            V::Struct(fields) => fields.iter().find(|(f, _)| *f == id).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn items(&self) -> &[V] {
        match self {
            V::List(items) => items,
            _ => &[],
        }
    }

    pub fn bytes(&self) -> &[u8] {
        match self {
            V::Bytes(b) => b,
            _ => &[],
        }
    }
}

/// An argument to encode.
pub enum A<'a> {
    Bool(bool),
    Bytes(&'a [u8]),
    I32(i32),
    I64(i64),
    /// A list of structs, each given as its fields.
    Structs(Vec<Vec<(i16, A<'a>)>>),
    /// A list of binaries.
    BytesList(Vec<&'a [u8]>),
    Struct(Vec<(i16, A<'a>)>),
}

fn type_id(a: &A) -> u8 {
    match a {
        A::Bool(_) => 2,
        A::I32(_) => 8,
        A::I64(_) => 10,
        A::Bytes(_) => 11,
        A::Struct(_) => 12,
        A::Structs(_) | A::BytesList(_) => 15,
    }
}

fn write_value(out: &mut Vec<u8>, a: &A) {
    match a {
        A::Bool(b) => out.push(u8::from(*b)),
        A::I32(n) => out.extend_from_slice(&n.to_be_bytes()),
        A::I64(n) => out.extend_from_slice(&n.to_be_bytes()),
        A::Bytes(b) => {
            out.extend_from_slice(&(b.len() as i32).to_be_bytes());
            out.extend_from_slice(b);
        }
        A::Struct(fields) => write_struct(out, fields),
        A::BytesList(items) => {
            out.push(11);
            out.extend_from_slice(&(items.len() as i32).to_be_bytes());
            for b in items {
                write_value(out, &A::Bytes(b));
            }
        }
        A::Structs(items) => {
            out.push(12);
            out.extend_from_slice(&(items.len() as i32).to_be_bytes());
            for fields in items {
                write_struct(out, fields);
            }
        }
    }
}

fn write_struct(out: &mut Vec<u8>, fields: &[(i16, A)]) {
    for (id, a) in fields {
        out.push(type_id(a));
        out.extend_from_slice(&id.to_be_bytes());
        write_value(out, a);
    }
    out.push(0);
}

struct Reader<'a>(&'a [u8], usize);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> &[u8] {
        let out = &self.0[self.1..self.1 + n];
        self.1 += n;
        out
    }

    fn i32(&mut self) -> i32 {
        i32::from_be_bytes(self.take(4).try_into().unwrap())
    }

    fn value(&mut self, t: u8) -> V {
        match t {
            2 => V::Bool(self.take(1)[0] != 0),
            3 => V::Int(i64::from(self.take(1)[0] as i8)),
            4 => V::Double(f64::from_be_bytes(self.take(8).try_into().unwrap())),
            6 => V::Int(i64::from(i16::from_be_bytes(self.take(2).try_into().unwrap()))),
            8 => V::Int(i64::from(self.i32())),
            10 => V::Int(i64::from_be_bytes(self.take(8).try_into().unwrap())),
            11 => {
                let n = self.i32() as usize;
                V::Bytes(self.take(n).to_vec())
            }
            12 => {
                let mut fields = Vec::new();
                loop {
                    let t = self.take(1)[0];
                    if t == 0 {
                        return V::Struct(fields);
                    }
                    let id = i16::from_be_bytes(self.take(2).try_into().unwrap());
                    fields.push((id, self.value(t)));
                }
            }
            13 => {
                let (k, v) = (self.take(1)[0], self.take(1)[0]);
                let n = self.i32();
                V::Map((0..n).map(|_| (self.value(k), self.value(v))).collect())
            }
            14 | 15 => {
                let e = self.take(1)[0];
                let n = self.i32();
                V::List((0..n).map(|_| self.value(e)).collect())
            }
            other => panic!("type id {other} in a reply"),
        }
    }
}

/// One connection to the gateway (buffered transport, binary protocol).
pub struct Client {
    stream: TcpStream,
    seq: i32,
}

/// A reply: the result struct (field 0 the value, 1.. the exceptions), or
/// the TApplicationException's message.
pub type Reply = Result<V, String>;

impl Client {
    pub fn connect(addr: &str) -> Client {
        let stream = TcpStream::connect(addr).expect("connect to the Thrift gateway");
        Client { stream, seq: 0 }
    }

    /// A client on a connection already made.
    pub fn from_stream(stream: TcpStream) -> Client {
        Client { stream, seq: 0 }
    }

    /// Calls `method` with `args`; the reply's struct.
    pub fn call(&mut self, method: &str, args: &[(i16, A)]) -> Reply {
        self.try_call(method, args)
            .unwrap_or_else(|| panic!("the gateway closed the connection during {method}"))
    }

    /// As [`Client::call`]; `None` when the connection fails (a server
    /// killed meanwhile).
    pub fn try_call(&mut self, method: &str, args: &[(i16, A)]) -> Option<Reply> {
        self.seq += 1;
        let mut out = Vec::new();
        out.extend_from_slice(&0x8001_0001u32.to_be_bytes());
        write_value(&mut out, &A::Bytes(method.as_bytes()));
        out.extend_from_slice(&self.seq.to_be_bytes());
        write_struct(&mut out, args);
        self.stream.write_all(&out).ok()?;
        // Read until a whole reply parses: replies here are small, so read
        // what is there and try.
        let mut buf = Vec::new();
        loop {
            let mut chunk = [0u8; 65536];
            let n = self.stream.read(&mut chunk).ok().filter(|n| *n > 0)?;
            buf.extend_from_slice(&chunk[..n]);
            if let Some(reply) = parse_reply(&buf, self.seq) {
                return Some(reply);
            }
        }
    }
}

fn parse_reply(buf: &[u8], seq: i32) -> Option<Reply> {
    let parsed = std::panic::catch_unwind(|| {
        let mut r = Reader(buf, 0);
        let head = r.i32() as u32;
        assert_eq!(head & 0xffff_0000, 0x8001_0000);
        let n = r.i32() as usize;
        r.take(n);
        assert_eq!(r.i32(), seq, "reply to another call");
        let body = r.value(12);
        (head & 0xff, body, r.1)
    });
    match parsed {
        Ok((2, body, used)) if used == buf.len() => Some(Ok(body)),
        Ok((3, body, used)) if used == buf.len() => {
            Some(Err(String::from_utf8_lossy(body.field(1).map_or(&[][..], V::bytes)).into_owned()))
        }
        _ => None,
    }
}

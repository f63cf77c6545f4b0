//! One database interface, two databases: the store's logic and SQL are
//! written once ([`crate::queries`]) over [`Backend`], which SQLite (the
//! default, embedded) and PostgreSQL (a team's server) each implement in a
//! few lines. Parameters are `$1, $2, ...` in order of first use, which both
//! read the same way; values are always bound, never spliced into the SQL.

pub(crate) mod postgres;
pub(crate) mod sqlite;

use crate::StoreError;

/// A value bound to or read from a statement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Bool(bool),
    Bytes(Vec<u8>),
}

impl Value {
    pub fn text(self) -> Option<String> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }
    pub fn int(&self) -> Option<i64> {
        match *self {
            Value::Int(i) => Some(i),
            _ => None,
        }
    }
    pub fn real(&self) -> Option<f64> {
        match *self {
            Value::Real(r) => Some(r),
            Value::Int(i) => Some(i as f64),
            _ => None,
        }
    }
    /// SQLite keeps a boolean as 0 or 1.
    pub fn bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            Value::Int(i) => Some(i != 0),
            _ => None,
        }
    }
    pub fn bytes(self) -> Option<Vec<u8>> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Text(s.to_string())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Text(s)
    }
}
impl From<Option<String>> for Value {
    fn from(s: Option<String>) -> Self {
        s.map_or(Value::Null, Value::Text)
    }
}
impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::Int(i)
    }
}
impl From<f64> for Value {
    fn from(r: f64) -> Self {
        Value::Real(r)
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

/// What the store needs of a database connection.
pub(crate) trait Backend: Send {
    /// Brings the schema to [`crate::latest`], refusing a database that is
    /// not a labrun store or comes from a newer labrun.
    fn migrate(&mut self) -> Result<(), StoreError>;
    /// Starts a transaction that takes the write lock at once, so two
    /// importers queue instead of failing half-way.
    fn begin(&mut self) -> Result<(), StoreError>;
    fn commit(&mut self) -> Result<(), StoreError>;
    fn rollback(&mut self);
    /// Runs a statement; the number of rows it changed.
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, StoreError>;
    /// Runs a query; every row as its values, in column order.
    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, StoreError>;
}

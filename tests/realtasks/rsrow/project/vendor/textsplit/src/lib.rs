//! Split delimited text into trimmed fields.

/// The fields of `s` between each `sep`, spaces around each trimmed.
pub fn fields(s: &str, sep: char) -> Vec<&str> {
    s.split(sep).map(str::trim).collect()
}

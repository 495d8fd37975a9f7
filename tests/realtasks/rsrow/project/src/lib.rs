//! Read one field of a comma-separated row.

/// The field at index `i` of the comma-separated `line`, or None when the line has none.
pub fn field(line: &str, i: usize) -> Option<String> {
    if line.is_empty() {
        return None;
    }
    let fields = textsplit::fields(line, ',');
    Some(fields[i].to_string())
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn an_empty_line_has_no_field() {
        assert_eq!(field("", 0), None);
    }
}

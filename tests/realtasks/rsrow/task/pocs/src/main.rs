//! The proof of concept: a row with fewer fields than the index asked for.

fn main() {
    let found = rsrow::field("only,two", 5);
    println!("field: {found:?}");
}

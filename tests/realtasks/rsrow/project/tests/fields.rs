use rsrow::field;

#[test]
fn reads_each_field() {
    for (i, want) in ["a", "b", "c"].iter().enumerate() {
        assert_eq!(field("a, b ,c", i).as_deref(), Some(*want));
    }
}

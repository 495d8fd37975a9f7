// The proof of concept: a row with fewer fields than the index asked for.
package main

import (
	"fmt"

	"example.invalid/gorow"
)

func main() {
	field, ok := gorow.Field("only,two", 5)
	fmt.Printf("field=%q found=%v\n", field, ok)
}

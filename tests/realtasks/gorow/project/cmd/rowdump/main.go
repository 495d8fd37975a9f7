// Command rowdump prints one field of each row given: rowdump INDEX ROW...
package main

import (
	"fmt"
	"os"
	"strconv"

	"example.invalid/gorow"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rowdump INDEX ROW...")
		os.Exit(2)
	}
	index, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "rowdump: bad index:", err)
		os.Exit(2)
	}
	for _, row := range os.Args[2:] {
		if field, ok := gorow.Field(row, index); ok {
			fmt.Println(field)
		}
	}
}

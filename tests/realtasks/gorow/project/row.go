// Package gorow reads one field of a comma-separated row.
package gorow

import "example.invalid/textsplit"

// Field returns the field at index i of the comma-separated line, and whether the line has
// such a field.
func Field(line string, i int) (string, bool) {
	fields := textsplit.Fields(line, ",")
	if i < 0 {
		return "", false
	}
	return fields[i], true
}

// Package textsplit splits delimited text into trimmed fields.
package textsplit

import "strings"

// Fields splits s at each sep and trims the spaces around every field.
func Fields(s, sep string) []string {
	parts := strings.Split(s, sep)
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return parts
}

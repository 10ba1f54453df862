package main

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// printable makes text from the store or the service safe for a terminal
// in human output: a string of graphic characters only is returned as it
// is; any other (a control character such as ESC, a tab or line break, a
// bidirectional override, invalid UTF-8) is returned quoted, with those
// characters escaped (strconv.QuoteToGraphic), so that an order field
// cannot move the cursor, retitle the window or reorder what follows.
// JSON output is never passed through it: it stays exact.
func printable(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsGraphic(r) {
			return strconv.QuoteToGraphic(s)
		}
	}
	return s
}

// printables is printable applied to each.
func printables(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = printable(s)
	}
	return out
}

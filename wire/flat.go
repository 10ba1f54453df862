package wire

import "github.com/certorder/certorder/internal/jsonscan"

// flatMembers calls fn with the name and the value of each member of body
// in turn, when body is a JSON object whose values are all strings without
// escapes, numbers, true, false or null (JSON whitespace around it): the
// shape of every request a client sends. It checks the shape in the same
// pass, and returns false when body is not of it; fn may then have seen
// some members, and json.Valid and jsonscan decide. One pass instead of
// json.Valid's state machine (2.5% of the service's CPU under load, in a
// profile of orderinfo at 10k orders) and then jsonscan's walk (a second
// pass, 2,200 instructions a request under callgrind). The names and
// values are as written (no escapes to undo). FuzzFlatValid checks that it
// never accepts what json.Valid refuses, FuzzFlatMembers that it sees
// what jsonscan.EachMember sees.
func flatMembers(b []byte, fn func(name, value []byte)) bool {
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = jsonscan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return jsonscan.SkipSpace(b, i+1) == len(b)
	}
	for {
		name := i
		if i = plainString(b, i); i < 0 {
			return false
		}
		nameEnd := i
		if i = jsonscan.SkipSpace(b, i); i >= len(b) || b[i] != ':' {
			return false
		}
		value := jsonscan.SkipSpace(b, i+1)
		if i = scalar(b, value); i < 0 {
			return false
		}
		fn(b[name+1:nameEnd-1], b[value:i])
		if i = jsonscan.SkipSpace(b, i); i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = jsonscan.SkipSpace(b, i+1)
		case '}':
			return jsonscan.SkipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

// plainString returns the end of a string without escapes at b[i:], or -1.
func plainString(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\' || c < 0x20:
			return -1
		}
	}
	return -1
}

// scalar returns the end of a plain string, a number, true, false or
// null at b[i:], or -1.
func scalar(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return plainString(b, i)
	case 't':
		return literal(b, i, "true")
	case 'f':
		return literal(b, i, "false")
	case 'n':
		return literal(b, i, "null")
	}
	return number(b, i)
}

func literal(b []byte, i int, word string) int {
	if len(b)-i >= len(word) && string(b[i:i+len(word)]) == word {
		return i + len(word)
	}
	return -1
}

// number returns the end of a JSON number at b[i:], or -1:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func number(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if j := digits(b, i+1); j > i+1 {
			i = j
		} else {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if j := digits(b, i); j > i {
			i = j
		} else {
			return -1
		}
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

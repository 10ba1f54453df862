package main

import (
	"slices"
	"strings"
)

// commandWords names the command meant by a word other programs use for it.
var commandWords = map[string]string{
	"ls": "list", "rm": "remove", "del": "remove", "delete": "remove", "new": "add",
}

// unknownCommand is the usage error for word, typed where path (the words
// before it: none, "admin", "admin member", "dev") wants a command: one
// line naming the closest command there, if one is close, and the help
// that lists them, never the whole usage. A command of admin typed
// without admin (certorder member list) is pointed there.
func (e *env) unknownCommand(path []string, word string) error {
	var names []string
	for _, c := range e.children(path) {
		names = append(names, c.word)
	}
	where := strings.Join(append([]string{"certorder"}, path...), " ")
	prefix := ""
	if len(path) > 0 {
		prefix = strings.Join(path, " ") + ": "
	}
	if strings.HasPrefix(word, "-") {
		return usageError("%s%q is not a command: the command comes first, then its flags ('%s --help' lists the commands)",
			prefix, word, where)
	}
	near := closestWord(word, names)
	if near == "" && len(path) == 0 {
		var admin []string
		for _, c := range e.children([]string{"admin"}) {
			admin = append(admin, c.word)
		}
		if a := closestWord(word, admin); a != "" {
			near = "admin " + a
		}
	}
	if near == "" {
		return usageError("%sunknown command %q ('%s --help' lists the commands)", prefix, word, where)
	}
	return usageError("%sunknown command %q; did you mean %q? ('%s --help' lists the commands)", prefix, word, near, where)
}

// closestWord is the one of names that word most likely meant: the one
// commandWords gives, else the one it is, else the one word starts (at
// least three letters, and only one name), else the nearest by edit
// distance, counting a swap of two neighbours as one edit, if it is near
// enough (a third of the word's length, at least one edit); "" if none is.
func closestWord(word string, names []string) string {
	w := strings.ToLower(word)
	if m, ok := commandWords[w]; ok && slices.Contains(names, m) {
		return m
	}
	if slices.Contains(names, w) {
		return w // the case was wrong: ADMIN
	}
	var starts []string
	for _, n := range names {
		if len(w) >= 3 && strings.HasPrefix(n, w) {
			starts = append(starts, n)
		}
	}
	if len(starts) == 1 {
		return starts[0]
	}
	best, bestDist := "", max(1, len(w)/3)+1
	for _, n := range names {
		if d := editDistance(w, n); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of two neighbours, one
// edit each, by bytes (command names are ASCII).
func editDistance(a, b string) int {
	rows := make([][]int, len(a)+1)
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, rows[i-2][j-2]+1)
			}
			rows[i][j] = d
		}
	}
	return rows[len(a)][len(b)]
}

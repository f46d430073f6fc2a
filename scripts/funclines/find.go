package main

import "bytes"

// blank returns C source with its comments and the insides of its string
// and character literals replaced by spaces, newlines kept: offsets and
// line numbers hold, and no comment or string can look like a definition.
func blank(src []byte) []byte {
	out := append([]byte(nil), src...)
	const (
		code = iota
		block
		line
		str
		chr
	)
	state := code
	for i := 0; i < len(out); i++ {
		c := out[i]
		next := byte(0)
		if i+1 < len(out) {
			next = out[i+1]
		}
		switch state {
		case code:
			switch {
			case c == '/' && next == '*':
				state = block
				out[i], out[i+1] = ' ', ' '
				i++
			case c == '/' && next == '/':
				state = line
				out[i], out[i+1] = ' ', ' '
				i++
			case c == '"':
				state = str
			case c == '\'':
				state = chr
			}
		case block:
			if c == '*' && next == '/' {
				state = code
				out[i], out[i+1] = ' ', ' '
				i++
			} else if c != '\n' {
				out[i] = ' '
			}
		case line:
			if c == '\n' {
				state = code
			} else {
				out[i] = ' '
			}
		case str, chr:
			end := byte('"')
			if state == chr {
				end = '\''
			}
			switch {
			case c == '\\' && next != 0:
				out[i] = ' '
				if next != '\n' {
					out[i+1] = ' '
				}
				i++
			case c == end:
				state = code
			case c == '\n':
				state = code // an unterminated literal ends with its line
			default:
				out[i] = ' '
			}
		}
	}
	return out
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// defLine is the 1-based line of the definition of the C function name in
// src (blanked by blank), 0 when src defines none. A definition is a line
// that starts at column 0 with the function's return type, or with the
// name itself when the type sits on the line above, then `name(`; the
// parameter list closes (over as many lines as it takes), and after it,
// past attributes such as __releases(x), comes the body's `{`. A
// prototype (`;` after the list), a call (indented, or after `=`) and a
// macro (`#define`) are not definitions. The first definition wins: under
// #ifdef alternatives that is the one written first.
func defLine(src []byte, name string) int {
	lineNo, start := 1, 0
	for start < len(src) {
		end := bytes.IndexByte(src[start:], '\n')
		if end < 0 {
			end = len(src)
		} else {
			end += start
		}
		if at := defOnLine(src, start, end, name); at {
			return lineNo
		}
		lineNo++
		start = end + 1
	}
	return 0
}

// defOnLine reports whether the line src[start:end] begins a definition
// of name.
func defOnLine(src []byte, start, end int, name string) bool {
	l := src[start:end]
	if len(l) == 0 || isSpace(l[0]) || !isIdent(l[0]) {
		return false
	}
	from := 0
	for {
		j := bytes.Index(l[from:], []byte(name))
		if j < 0 {
			return false
		}
		j += from
		from = j + len(name)
		if j > 0 && isIdent(l[j-1]) || from < len(l) && isIdent(l[from]) {
			continue // part of a longer identifier
		}
		if !typePrefix(l[:j]) {
			return false
		}
		k := start + from
		for k < end && (l[k-start] == ' ' || l[k-start] == '\t') {
			k++
		}
		if k >= end || src[k] != '(' {
			continue
		}
		return bodyFollows(src, k)
	}
}

// typePrefix reports whether p, what precedes the name on its line, can
// be a declaration's specifiers and return type: identifiers, spaces and
// stars only ("static struct sk_buff *", "void", or nothing).
func typePrefix(p []byte) bool {
	for _, c := range p {
		if !isIdent(c) && c != ' ' && c != '\t' && c != '*' {
			return false
		}
	}
	return true
}

// bodyFollows reports whether the parenthesised list opening at src[open]
// is followed by a function body: `{`, past attributes written as
// identifiers with their own parenthesised arguments.
func bodyFollows(src []byte, open int) bool {
	i := closing(src, open)
	if i < 0 {
		return false
	}
	for i++; i < len(src); {
		c := src[i]
		switch {
		case isSpace(c):
			i++
		case c == '{':
			return true
		case isIdent(c):
			for i < len(src) && isIdent(src[i]) {
				i++
			}
			for i < len(src) && isSpace(src[i]) {
				i++
			}
			if i < len(src) && src[i] == '(' {
				if i = closing(src, i); i < 0 {
					return false
				}
				i++
			}
		default:
			return false // ';' (a prototype), ',' or '=' (a declaration), ...
		}
	}
	return false
}

// closing is the index of the ')' that closes the '(' at src[open], -1
// when it is not closed.
func closing(src []byte, open int) int {
	depth := 0
	for i := open; i < len(src); i++ {
		switch src[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		case '{', ';':
			return -1 // a body or a statement before the list closed: not a signature
		}
	}
	return -1
}

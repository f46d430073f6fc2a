package tutorials

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// The expression lexer: numbers, strings, names and operators, each with
// its byte offset for error messages.

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokNum
	tokStr
	tokIdent
	tokOp
)

type token struct {
	kind tokKind
	pos  int
	text string
	num  float64
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokNum:
		return "number " + t.text
	case tokStr:
		return "string " + t.text
	case tokIdent:
		return "name " + t.text
	}
	return "'" + t.text + "'"
}

type exprParser struct {
	src  string
	toks []token
	i    int
}

func (p *exprParser) errAt(pos int, format string, args ...any) error {
	return &ExprError{Expr: p.src, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func isIdentStart(r byte) bool { return r == '_' || r < 128 && unicode.IsLetter(rune(r)) }
func isIdentPart(r byte) bool {
	return isIdentStart(r) || r >= '0' && r <= '9' || r == '.'
}

func (p *exprParser) lex() error {
	s := p.src
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == '_' ||
				s[j] == 'e' || s[j] == 'E' ||
				(s[j] == '+' || s[j] == '-') && j > i && (s[j-1] == 'e' || s[j-1] == 'E')) {
				j++
			}
			if j < len(s) && isIdentStart(s[j]) {
				return p.errAt(j, "a number cannot run into a name (%q)", s[i:j+1])
			}
			text := s[i:j]
			f, err := strconv.ParseFloat(strings.ReplaceAll(text, "_", ""), 64)
			if err != nil || strings.HasPrefix(text, "_") || strings.HasSuffix(text, "_") || strings.Contains(text, "__") {
				return p.errAt(i, "bad number %q", text)
			}
			p.toks = append(p.toks, token{kind: tokNum, pos: i, text: text, num: f})
			i = j
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return p.errAt(i, "unterminated string")
			}
			text := s[i : j+1]
			str, err := strconv.Unquote(text)
			if err != nil {
				return p.errAt(i, "bad string %s", text)
			}
			p.toks = append(p.toks, token{kind: tokStr, pos: i, text: text})
			p.toks[len(p.toks)-1].text = str
			i = j + 1
		case isIdentStart(c):
			j := i
			for j < len(s) && isIdentPart(s[j]) {
				j++
			}
			name := s[i:j]
			if strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
				return p.errAt(i, "bad name %q", name)
			}
			p.toks = append(p.toks, token{kind: tokIdent, pos: i, text: name})
			i = j
		default:
			two := ""
			if i+1 < len(s) {
				two = s[i : i+2]
			}
			switch two {
			case "<=", ">=", "==", "!=":
				p.toks = append(p.toks, token{kind: tokOp, pos: i, text: two})
				i += 2
				continue
			}
			switch c {
			case '+', '-', '*', '/', '(', ')', ',', '<', '>':
				p.toks = append(p.toks, token{kind: tokOp, pos: i, text: string(c)})
				i++
			case '=':
				return p.errAt(i, "'=' is not a comparison: write '=='")
			default:
				return p.errAt(i, "unexpected character %q", c)
			}
		}
	}
	p.toks = append(p.toks, token{kind: tokEOF, pos: len(s)})
	return nil
}

func (p *exprParser) peek() token { return p.toks[p.i] }
func (p *exprParser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *exprParser) isOp(s string) bool {
	t := p.peek()
	return t.kind == tokOp && t.text == s
}

package mem

// list is an intrusive doubly linked list of block heads threaded through
// Page.next and Page.prev: a zone free_area list or a pcp list. A page is
// on at most one list. Insertions and removals are O(1).
type list struct {
	head, tail PageID
	n          int // entries (blocks, not base pages)
}

func newList() list { return list{head: NoPage, tail: NoPage} }

// add inserts id at the front (list_add).
func (m *Mem) listAdd(l *list, id PageID) {
	p := &m.pages[id]
	p.prev = NoPage
	p.next = l.head
	if l.head != NoPage {
		m.pages[l.head].prev = id
	} else {
		l.tail = id
	}
	l.head = id
	l.n++
}

// addTail inserts id at the back (list_add_tail).
func (m *Mem) listAddTail(l *list, id PageID) {
	p := &m.pages[id]
	p.next = NoPage
	p.prev = l.tail
	if l.tail != NoPage {
		m.pages[l.tail].next = id
	} else {
		l.head = id
	}
	l.tail = id
	l.n++
}

// del removes id, which must be on l (list_del).
func (m *Mem) listDel(l *list, id PageID) {
	p := &m.pages[id]
	if p.prev != NoPage {
		m.pages[p.prev].next = p.next
	} else {
		l.head = p.next
	}
	if p.next != NoPage {
		m.pages[p.next].prev = p.prev
	} else {
		l.tail = p.prev
	}
	p.next, p.prev = NoPage, NoPage
	l.n--
}

// popHead removes and returns the first entry, NoPage when empty.
func (m *Mem) listPopHead(l *list) PageID {
	id := l.head
	if id != NoPage {
		m.listDel(l, id)
	}
	return id
}

// popTail removes and returns the last entry (list_last_entry + list_del).
func (m *Mem) listPopTail(l *list) PageID {
	id := l.tail
	if id != NoPage {
		m.listDel(l, id)
	}
	return id
}

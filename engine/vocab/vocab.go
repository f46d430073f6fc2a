// Package vocab is the one vocabulary of ringlab's numbers. Every number a
// world, a real interface or the playground shows has one entry here: its
// name, its unit, its kind (a counter only grows, a gauge goes up and
// down) and what it means, naming where the kernel keeps it. The page's
// tooltips, the tutorials' names, the traces, `ringlab numbers`, the
// Prometheus HELP lines and docs/numbers.md all read this table, so a
// name means one thing everywhere.
//
// Names are the kernel's where it has one (rx_packets, rx_pp_recycle_cached,
// softnet_stat's processed); the rest are namespaced by what they belong
// to (rq0.num_free, pages.buddy, cpu1.util). A Desc's name may be a
// pattern: N stands for an index (rxN_packets, cpuN.util) and * for any
// rest (cost.*, scenario.*).
//
// Another name of a number is an alias the table declares (Desc.Same):
// netlink's page_pool.alloc_fast for rx_pp_alloc_fast, the tutorials'
// older time_ns for sim_time_ns. The sources emit the canonical name
// (Canonical), and a reader given an alias reads the number it stands
// for. The builders of indexed names (Queue, Ring, Pool, Pages, CPUUtil,
// CPUCounter, CPUPerf, Drops, ...) spell rx0_kicks, rq0.num_free,
// cpu1.util, pages.skb or drops.FULL_RING the one way. docs/numbers.md
// is generated from the table (markdown.go); a test holds it current.
//
// The package is a leaf: plain data and pure functions, for every layer.
package vocab

import (
	"regexp"
	"strconv"
	"strings"
)

// Kind says how a number behaves over time.
type Kind uint8

// The kinds.
const (
	Counter Kind = iota + 1 // only grows while its world or interface lives; rates are taken of it
	Gauge                   // a level, a rate or a setting: goes up and down
	Text                    // a word, not a number (mode, xdp.program)
)

var kindNames = [...]string{Counter: "counter", Gauge: "gauge", Text: "text"}

// String names the kind: "counter", "gauge" or "text".
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// MarshalText writes the kind's name.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Desc describes one number, or a family of them when Name is a pattern.
type Desc struct {
	Name string `json:"name"` // the name; N stands for an index, * for any rest
	Unit string `json:"unit"` // packets, bytes, ns, pages, fraction (0 to 1), ...
	Kind Kind   `json:"kind"`
	Help string `json:"help"` // what it is and where the kernel keeps it
	// Group is the part of the machine the number belongs to: the
	// sections of docs/numbers.md.
	Group string `json:"group"`
	// Same makes this name an alias: another name of the number Same
	// names, the canonical one. An alias is what older text spells (the
	// tutorials' time_ns for sim_time_ns) or what a source reads from
	// the kernel under another interface's name (netlink's
	// page_pool.alloc_fast for the ethtool rx_pp_alloc_fast, veth's
	// rx_xdp_redirect for rx_xdp_redirects). No edge emits an alias:
	// the sources rename what they read with Canonical, and a reader
	// given an alias reads the canonical number.
	Same string `json:"same,omitempty"`
}

// Table returns every entry, grouped as docs/numbers.md shows them. The
// slice is a copy.
func Table() []Desc { return append([]Desc(nil), table...) }

// Lookup returns the entry of name: the one with that exact name, or the
// first pattern it matches.
func Lookup(name string) (Desc, bool) {
	if i, ok := exact[name]; ok {
		return table[i], true
	}
	for _, p := range patterns {
		if p.re.MatchString(name) {
			return table[p.i], true
		}
	}
	return Desc{}, false
}

// Canonical is the name name stands for: the canonical name of an alias
// (Desc.Same: "page_pool.alloc_fast" is "rx_pp_alloc_fast"), for a twin's
// prediction of an alias the prediction of the canonical name, else name
// itself.
func Canonical(name string) string {
	if i, ok := exact[name]; ok {
		if s := table[i].Same; s != "" {
			return s
		}
		return name
	}
	if base, ok := strings.CutPrefix(name, PredictedPrefix); ok {
		if c := Canonical(base); c != base {
			return Predicted(c)
		}
	}
	return name
}

// Names of indexed numbers. Every layer builds them here so that they are
// spelled once.

// Queue is a per-queue ethtool name: Queue("rx", 0, "packets") is
// "rx0_packets" (virtnet_get_strings' "rx%u_%s").
func Queue(dir string, q int, name string) string {
	return dir + strconv.Itoa(q) + "_" + name
}

// Total is the name of a per-queue counter summed over queues:
// Total("rx", "packets") is "rx_packets".
func Total(dir, name string) string { return dir + "_" + name }

// Ring is a field of receive virtqueue q: Ring(0, "num_free") is
// "rq0.num_free".
func Ring(q int, field string) string { return "rq" + strconv.Itoa(q) + "." + field }

// SendRing is a field of send virtqueue q: "sq0.num_free".
func SendRing(q int, field string) string { return "sq" + strconv.Itoa(q) + "." + field }

// Pool is a field of page_pool i: "pool0.cache".
func Pool(i int, field string) string { return "pool" + strconv.Itoa(i) + "." + field }

// Cpumap is a field of cpumap entry i (the target CPU):
// "cpumap1.consumer_lock".
func Cpumap(i int, field string) string { return "cpumap" + strconv.Itoa(i) + "." + field }

// Pages is the number of pages in location loc (mem.Loc's name):
// "pages.buddy".
func Pages(loc string) string { return "pages." + loc }

// CPUUtil is CPU i's utilisation: "cpu0.util".
func CPUUtil(i int) string { return "cpu" + strconv.Itoa(i) + ".util" }

// CPUCounter is CPU i's counter name, as World.CPUCounters names it for
// the sum: "cpu0.softnet.time_squeeze".
func CPUCounter(i int, name string) string { return "cpu" + strconv.Itoa(i) + "." + name }

// CPUPerf is CPU i's share of time in kernel function sym (the perf top):
// "cpu0.perf._raw_spin_lock".
func CPUPerf(i int, sym string) string { return "cpu" + strconv.Itoa(i) + ".perf." + sym }

// PagePoolStat strips the ethtool prefix of a page_pool stat for the
// per-pool and host names: "rx_pp_alloc_fast" -> "alloc_fast".
func PagePoolStat(ethtool string) string { return strings.TrimPrefix(ethtool, "rx_pp_") }

// Drops is the counter of drops for one reason, the kernel's
// skb_drop_reason name or the model's (engine/drop): "drops.FULL_RING",
// "drops.xdp_drop".
func Drops(reason string) string { return DropsPrefix + reason }

// DropsPrefix starts the name of a drop reason's counter.
const DropsPrefix = "drops."

// DropsHelp is what the drop reasons' counters are, as one family (a
// Prometheus family with a reason label): each reason's own meaning is
// its entry's.
const DropsHelp = "packets dropped, by reason: the kernel's enum skb_drop_reason name without SKB_DROP_REASON_ (FULL_RING, SOCKET_RCVBUFF, PROTO_MEM: as the skb:kfree_skb tracepoint prints it) where the scenario's kernel frees an skb with it, else the model's own name, in lower case (xdp_drop, cpumap_queue_full, vdpa_no_buffer)"

// Predicted is a twin source's prediction of name: "predicted_rx_packets".
func Predicted(name string) string { return PredictedPrefix + name }

// PredictedPrefix starts the name of a twin source's prediction.
const PredictedPrefix = "predicted_"

type pattern struct {
	re *regexp.Regexp
	i  int
}

var (
	exact    = map[string]int{}
	patterns []pattern
)

func init() {
	for i, d := range table {
		// A drop reason is a name as the kernel spells it, capitals
		// included (drops.FULL_RING): N is a letter there, only * a
		// pattern.
		if (d.Group == GroupDrops && !strings.Contains(d.Name, "*")) || !strings.ContainsAny(d.Name, "N*") {
			exact[d.Name] = i
			continue
		}
		patterns = append(patterns, pattern{compile(d.Name), i})
	}
}

// compile turns a pattern into a regexp: N an index, * any rest.
func compile(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for _, r := range p {
		switch r {
		case 'N':
			b.WriteString("[0-9]+")
		case '*':
			b.WriteString(".+")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// Describe is what every edge says of a name it shows: the name's entry;
// for a twin's prediction (predicted_rx_packets) the entry of the number
// it predicts, with its unit and kind and a help that says so; and for a
// name the vocabulary does not know (a driver's own ethtool statistic) a
// counter of no unit with a generic help. known is false in that last
// case.
func Describe(name string) (d Desc, known bool) {
	if base, ok := strings.CutPrefix(name, PredictedPrefix); ok && base != "" {
		b, known := Describe(base)
		return Desc{Name: name, Unit: b.Unit, Kind: b.Kind, Group: GroupTwin,
			Help: "the twin's prediction of " + base + ", by the engine driven with the real source's rate and frame size: " + b.Help}, known
	}
	if d, ok := Lookup(name); ok {
		return d, true
	}
	return Desc{Name: name, Kind: Counter, Group: GroupHost, Help: UnknownHelp}, false
}

// UnknownHelp is the meaning Describe gives a name the vocabulary does
// not know.
const UnknownHelp = "as read from the source: a driver's own statistic, not in ringlab's vocabulary (its driver's source says what it counts)"

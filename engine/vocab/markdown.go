package vocab

import "strings"

// groupTitles say what each group is, for docs/numbers.md.
var groupTitles = map[string]string{
	GroupDevice:   "The device: virtio_net's ethtool counters (`ethtool -S`), summed over queues and per queue",
	GroupPagePool: "page_pool: the 11 stats (net/core/page_pool.c), summed over the pools",
	GroupEngine:   "Elsewhere in the kernel: interrupts, NAPI, the host, cpumap, devmap, the stack, the page allocator",
	GroupDrops:    "Drops by reason: the kernel's `enum skb_drop_reason` name (`SOCKET_RCVBUFF`, as the `skb:kfree_skb` tracepoint prints it) where the scenario's kernel frees an skb with it, else the model's own, in lower case (`/metrics`: `ringlab_drops_total{reason=\"...\"}`)",
	GroupFlow:     "The page's flow rates no one counter holds (engine/view's series): each a sum or difference of the counters above, drawn per second",
	GroupRun:      "The run: time, events, rates, CPUs",
	GroupPages:    "Pages by location (every page is in exactly one)",
	GroupRing:     "The virtqueues and the driver's view of them (receive queue N: rqN, send queue N: sqN)",
	GroupPool:     "One page_pool's state (pool N)",
	GroupWorld:    "The world's configuration as numbers",
	GroupHost:     "A real interface (`ringlab serve --source host:IF`, the tutorials' host directive)",
	GroupLab:      "The lab (`ringlab serve --source lab`, docs/lab.md)",
	GroupTwin:     "The twin (`--source twin:SPEC`)",
}

// Markdown is the table as docs/numbers.md prints it: a section per
// group, a row per number.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# Numbers\n\n")
	b.WriteString("Every number ringlab shows has one name, the same in the page's counters table and its\n")
	b.WriteString("tooltips, the traces (`ringlab run --trace`), the tutorials' checks, `/ws/metrics`,\n")
	b.WriteString("`/metrics` (as `ringlab_NAME_total` for a counter, `ringlab_NAME` for a gauge, in\n")
	b.WriteString("snake_case and base units as docs/protocol.md says, with this table's text as HELP),\n")
	b.WriteString("the live table and `ringlab numbers`. A counter only grows; a gauge goes\n")
	b.WriteString("up and down. In a name, N stands for an index (a queue, a CPU, a pool) and * for any\n")
	b.WriteString("rest.\n\n")
	b.WriteString("Generated from engine/vocab by `go test ./engine/vocab -run TestNumbersDocIsCurrent -update`.\n")
	group := ""
	for _, d := range table {
		if d.Group != group {
			group = d.Group
			b.WriteString("\n## " + groupTitles[group] + "\n\n")
			b.WriteString("| name | unit | kind | what |\n| --- | --- | --- | --- |\n")
		}
		what := d.Help
		if d.Same != "" {
			what += "; an alias of `" + d.Same + "`: every edge shows the number under that name"
		}
		b.WriteString("| `" + d.Name + "` | " + d.Unit + " | " + d.Kind.String() + " | " + strings.ReplaceAll(what, "|", "\\|") + " |\n")
	}
	return b.String()
}

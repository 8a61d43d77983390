package bench

import (
	"bufio"
	"fmt"
	"io"
)

// barChart is an SVG chart of horizontal bars in panels, each panel with a
// scale of its own: the benchmark's figures differ by orders of magnitude
// from one panel to the next. The comparison of brokers and the scaling
// curve both draw with it.
type barChart struct {
	heading string
	legend  []string // one swatch per palette colour, in order; may be empty
	panels  []barPanel
}

// barPanel is one figure's bars.
type barPanel struct {
	title, label string
	bars         []bar
}

// bar is one bar of a panel. Without a value (has false), missing is
// written in its place.
type bar struct {
	label   string
	colour  int // index in palette
	value   float64
	has     bool
	text    string // the figure written after the bar
	missing string
	// after is written, in afterColour, after the figure (FAIL, a note).
	after       string
	afterColour string
	afterBold   bool
}

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#17becf"}

// write draws the chart.
func (c barChart) write(w io.Writer) error {
	const (
		width  = 960
		left   = 200 // labels
		barMax = 520
		barH   = 16
		gap    = 4
	)
	top := 40
	if len(c.legend) > 0 {
		top = 70
	}
	height := top + 10
	for _, pn := range c.panels {
		height += 22 + len(pn.bars)*(barH+gap) + 14
	}

	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="10" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", xmlEscape(c.heading))
	x := 10
	for i, name := range c.legend {
		p(`<rect x="%d" y="40" width="12" height="12" fill="%s"/><text x="%d" y="50">%s</text>`+"\n", x, palette[i%len(palette)], x+16, xmlEscape(name))
		x += 16 + 8*len(name) + 24
	}
	y := top
	for _, pn := range c.panels {
		var most float64
		for _, b := range pn.bars {
			if b.has {
				most = max(most, b.value)
			}
		}
		p(`<text x="10" y="%d" font-weight="bold">%s</text><text x="%d" y="%d" fill="#555">%s</text>`+"\n", y+12, xmlEscape(pn.title), left, y+12, xmlEscape(pn.label))
		by := y + 20
		for _, b := range pn.bars {
			p(`<text x="20" y="%d" fill="#333">%s</text>`, by+12, xmlEscape(b.label))
			if !b.has {
				p(`<text x="%d" y="%d" fill="#999">%s</text>`, left, by+12, xmlEscape(b.missing))
			} else {
				length := 0.0
				if most > 0 {
					length = b.value / most * barMax
				}
				p(`<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`, left, by, length, barH, palette[b.colour%len(palette)])
				p(`<text x="%.1f" y="%d">%s</text>`, float64(left)+length+6, by+12, xmlEscape(b.text))
				if b.after != "" {
					weight := ""
					if b.afterBold {
						weight = ` font-weight="bold"`
					}
					p(`<text x="%.1f" y="%d" fill="%s"%s>%s</text>`, float64(left)+length+14+7*float64(len(b.text)), by+12, b.afterColour, weight, xmlEscape(b.after))
				}
			}
			p("\n")
			by += barH + gap
		}
		y += 22 + len(pn.bars)*(barH+gap) + 14
	}
	p("</svg>\n")
	return bw.Flush()
}

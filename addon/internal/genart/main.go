//go:build ignore

// Genart draws the add-on's icon.png (128x128) and logo.png (250x100): a
// flame over two crossed logs on a dark rounded square, and for the logo the
// word HEARTH beside it. Run it from the repository root after changing it:
//
//	go run addon/internal/genart/main.go
//
// The output is deterministic; addon/addon_test.go checks the sizes.
package main

import (
	"image"
	"image/color"
	"image/png"
	"log"
	"math"
	"os"
	"path/filepath"
)

// rgba is a straight-alpha colour with components in [0, 1].
type rgba struct{ r, g, b, a float64 }

func hex(v uint32) rgba {
	return rgba{float64(v>>16&0xff) / 255, float64(v>>8&0xff) / 255, float64(v&0xff) / 255, 1}
}

func mix(a, b rgba, t float64) rgba {
	t = math.Max(0, math.Min(1, t))
	return rgba{a.r + (b.r-a.r)*t, a.g + (b.g-a.g)*t, a.b + (b.b-a.b)*t, a.a + (b.a-a.a)*t}
}

// over paints src over dst.
func over(dst, src rgba) rgba {
	a := src.a + dst.a*(1-src.a)
	if a == 0 {
		return rgba{}
	}
	f := func(s, d float64) float64 { return (s*src.a + d*dst.a*(1-src.a)) / a }
	return rgba{f(src.r, dst.r), f(src.g, dst.g), f(src.b, dst.b), a}
}

var (
	bgTop     = hex(0x20232b)
	bgBottom  = hex(0x15171c)
	glow      = hex(0x5a2a12)
	flameBase = hex(0xff9a1f)
	flameTip  = hex(0xe0380b)
	coreBase  = hex(0xfff2b3)
	coreTip   = hex(0xffc53d)
	logBark   = hex(0x6e4322)
	logEdge   = hex(0x4f2f17)
	logCut    = hex(0xd09a5f)
	logRing   = hex(0xa46d3b)
	letter    = hex(0xf3e9dc)
)

type point struct{ x, y float64 }

// teardrop returns a flame outline: tip at (cx, base-h), round bottom at
// base, half-width about w, the tip bent sideways by bend.
func teardrop(cx, base, w, h, bend float64) []point {
	const n = 240
	pts := make([]point, 0, n)
	for i := 0; i < n; i++ {
		t := 2 * math.Pi * float64(i) / n
		y := base - h*(1+math.Cos(t))/2
		up := (base - y) / h
		x := cx + w*math.Sin(t)*math.Pow(math.Abs(math.Sin(t/2)), 1.3) + bend*up*up*up
		pts = append(pts, point{x, y})
	}
	return pts
}

func inside(poly []point, p point) bool {
	in := false
	for i, j := 0, len(poly)-1; i < len(poly); j, i = i, i+1 {
		a, b := poly[i], poly[j]
		if (a.y > p.y) != (b.y > p.y) && p.x < (b.x-a.x)*(p.y-a.y)/(b.y-a.y)+a.x {
			in = !in
		}
	}
	return in
}

// segDist is the distance from p to the segment ab, and where along it (0..1).
func segDist(p, a, b point) (float64, float64) {
	dx, dy := b.x-a.x, b.y-a.y
	t := ((p.x-a.x)*dx + (p.y-a.y)*dy) / (dx*dx + dy*dy)
	t = math.Max(0, math.Min(1, t))
	x, y := a.x+t*dx-p.x, a.y+t*dy-p.y
	return math.Hypot(x, y), t
}

func roundRect(p point, w, h, r float64) bool {
	x := math.Max(math.Max(r-p.x, p.x-(w-r)), 0)
	y := math.Max(math.Max(r-p.y, p.y-(h-r)), 0)
	return x*x+y*y <= r*r
}

// glyph is the flame-and-logs mark drawn in a square of side s at (ox, oy).
type glyph struct {
	ox, oy, s    float64
	outer, inner []point
	logs         [2][2]point
	logR         float64
}

func newGlyph(ox, oy, s float64) glyph {
	g := glyph{ox: ox, oy: oy, s: s, logR: 0.075 * s}
	cx := ox + 0.5*s
	g.outer = teardrop(cx, oy+0.74*s, 0.27*s, 0.66*s, 0.05*s)
	g.inner = teardrop(cx+0.01*s, oy+0.74*s, 0.14*s, 0.36*s, 0.02*s)
	g.logs[0] = [2]point{{ox + 0.2*s, oy + 0.86*s}, {ox + 0.8*s, oy + 0.72*s}}
	g.logs[1] = [2]point{{ox + 0.2*s, oy + 0.72*s}, {ox + 0.8*s, oy + 0.86*s}}
	return g
}

func (g glyph) paint(c rgba, p point) rgba {
	// A warm glow behind the fire.
	d := math.Hypot(p.x-(g.ox+0.5*g.s), p.y-(g.oy+0.7*g.s)) / (0.55 * g.s)
	if d < 1 {
		gl := glow
		gl.a = 0.55 * (1 - d) * (1 - d)
		c = over(c, gl)
	}
	// Logs, the back one first, each with a cut end.
	for _, l := range g.logs {
		dist, t := segDist(p, l[0], l[1])
		if dist > g.logR {
			continue
		}
		col := mix(logBark, logEdge, dist/g.logR*0.8)
		for _, end := range []float64{0, 1} {
			e := l[int(end)]
			if r := math.Hypot(p.x-e.x, p.y-e.y); math.Abs(t-end) < 0.2 && r < g.logR*0.78 {
				col = logCut
				if r > g.logR*0.45 && r < g.logR*0.6 {
					col = logRing
				}
			}
		}
		c = over(c, col)
	}
	if inside(g.outer, p) {
		c = over(c, mix(flameBase, flameTip, (g.oy+0.74*g.s-p.y)/(0.66*g.s)))
	}
	if inside(g.inner, p) {
		c = over(c, mix(coreBase, coreTip, (g.oy+0.74*g.s-p.y)/(0.36*g.s)))
	}
	return c
}

// font5x7 holds the letters of HEARTH, one row a string.
var font5x7 = map[rune][7]string{
	'H': {"10001", "10001", "10001", "11111", "10001", "10001", "10001"},
	'E': {"11111", "10000", "10000", "11110", "10000", "10000", "11111"},
	'A': {"01110", "10001", "10001", "11111", "10001", "10001", "10001"},
	'R': {"11110", "10001", "10001", "11110", "10100", "10010", "10001"},
	'T': {"11111", "00100", "00100", "00100", "00100", "00100", "00100"},
}

func textAt(word string, ox, oy, cell float64, p point) bool {
	for i, ch := range word {
		x0 := ox + float64(i)*6*cell
		cx := int(math.Floor((p.x - x0) / cell))
		cy := int(math.Floor((p.y - oy) / cell))
		if cx < 0 || cx >= 5 || cy < 0 || cy >= 7 {
			continue
		}
		if font5x7[ch][cy][cx] == '1' {
			return true
		}
	}
	return false
}

// render samples shade on an ss×ss grid in each pixel.
func render(w, h, ss int, shade func(point) rgba) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			var r, g, b, a float64
			for j := 0; j < ss; j++ {
				for i := 0; i < ss; i++ {
					c := shade(point{float64(x) + (float64(i)+0.5)/float64(ss), float64(y) + (float64(j)+0.5)/float64(ss)})
					r, g, b, a = r+c.r*c.a, g+c.g*c.a, b+c.b*c.a, a+c.a
				}
			}
			n := float64(ss * ss)
			out := color.NRGBA{}
			if a > 0 {
				out = color.NRGBA{
					R: uint8(math.Round(r / a * 255)), G: uint8(math.Round(g / a * 255)),
					B: uint8(math.Round(b / a * 255)), A: uint8(math.Round(a / n * 255)),
				}
			}
			img.SetNRGBA(x, y, out)
		}
	}
	return img
}

func background(p point, w, h, r float64) rgba {
	if !roundRect(p, w, h, r) {
		return rgba{}
	}
	return mix(bgTop, bgBottom, p.y/h)
}

func icon() *image.NRGBA {
	const n = 128
	g := newGlyph(8, 6, 112)
	return render(n, n, 4, func(p point) rgba {
		c := background(p, n, n, 24)
		if c.a == 0 {
			return c
		}
		return g.paint(c, p)
	})
}

func logo() *image.NRGBA {
	const w, h = 250, 100
	g := newGlyph(8, 4, 88)
	const cell = 4.0
	textX, textY := 100.0, (h-7*cell)/2+2
	return render(w, h, 4, func(p point) rgba {
		c := background(p, w, h, 18)
		if c.a == 0 {
			return c
		}
		c = g.paint(c, p)
		if textAt("HEARTH", textX, textY, cell, p) {
			c = over(c, letter)
		}
		return c
	})
}

func write(path string, img image.Image) {
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(f, img); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}

func main() {
	dir := filepath.Join("addon", "hearth")
	write(filepath.Join(dir, "icon.png"), icon())
	write(filepath.Join(dir, "logo.png"), logo())
}

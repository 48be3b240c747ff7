package dirsvc

import "math"

// EarthRadiusKm is the mean radius of the Earth HaversineKm uses (the usual 6371 km).
const EarthRadiusKm = 6371.0

const radPerDeg = math.Pi / 180

// HaversineKm returns the great-circle distance in kilometres between two positions given in
// decimal degrees, on a sphere of radius EarthRadiusKm. On the ellipsoid the distance differs by up
// to about 0.5%, which is well below what a place name tells of a position.
func HaversineKm(lat1, lon1, lat2, lon2 float64) float64 {
	return havKm(haversine(lat1*radPerDeg, math.Cos(lat1*radPerDeg), lon1*radPerDeg,
		lat2*radPerDeg, math.Cos(lat2*radPerDeg), lon2*radPerDeg))
}

// haversine returns the haversine of the central angle between two positions in radians, given
// with the cosines of their latitudes; it grows with the distance, so nearest compares it instead.
func haversine(φ1, cosφ1, λ1, φ2, cosφ2, λ2 float64) float64 {
	sφ := math.Sin((φ2 - φ1) / 2)
	sλ := math.Sin((λ2 - λ1) / 2)
	return min(1, sφ*sφ+cosφ1*cosφ2*sλ*sλ)
}

func havKm(h float64) float64 { return 2 * EarthRadiusKm * math.Asin(math.Sqrt(h)) }

// NearestMarginDeg is how far, in degrees, beyond the extent of a country's localities a position
// still has a nearest locality (NearestLocality): about 110 km north or south.
const NearestMarginDeg = 1.0

// gridCellDeg is the side of a grid cell in degrees: about 28 km north to south, so a cell of a
// city holds a few hundred localities at most, and most lookups read nine cells or 25.
const gridCellDeg = 0.25

// box is an extent in degrees.
type box struct{ south, north, west, east float64 }

func (b box) contains(lat, lon float64) bool {
	return lat >= b.south && lat <= b.north && lon >= b.west && lon <= b.east
}

// grid is a bucket index of positions: cells of gridCellDeg degrees over the extent of the
// localities, each listing the positions in it.
type grid struct {
	extents    []box // each country's extent, widened by NearestMarginDeg
	all        box   // the cells' extent: every extent
	rows, cols int
	// start[c] is where cell c's points begin in pts (cells row by row from the south-west corner;
	// start has one more entry, the end).
	start []int32
	pts   []gridPoint
	// ringKm is a lower bound of the distance from a position to any point two rings of cells or
	// more away, per ring: see nearest.
	ringKm float64
	// rowCos is, per row of cells, the cosine of its edge farther from the equator: how much a
	// degree of longitude shrinks there at most.
	rowCos []float64
}

// lonShrink bounds how much shorter than along the parallel the great circle between two positions
// of the same latitude is: by under 10% for differences of longitude under 90 degrees at the
// latitudes of the grid (the longest the parallel is at most 1/0.9 of it).
const lonShrink = 0.9

// gridPoint is a position in radians, with the cosine of its latitude, and its locality's index.
type gridPoint struct {
	φ, λ, cosφ float64
	i          int32
}

// newGrid indexes the positions of the localities that are places (not Postal).
func newGrid(locs []Locality) grid {
	var g grid
	byCountry := map[string]int{}
	for _, l := range locs {
		if l.Postal() {
			continue
		}
		k, ok := byCountry[l.Country]
		if !ok {
			k = len(g.extents)
			byCountry[l.Country] = k
			g.extents = append(g.extents, box{l.Lat, l.Lat, l.Lon, l.Lon})
		}
		b := &g.extents[k]
		b.south, b.north = min(b.south, l.Lat), max(b.north, l.Lat)
		b.west, b.east = min(b.west, l.Lon), max(b.east, l.Lon)
	}
	for k, b := range g.extents {
		b = box{b.south - NearestMarginDeg, b.north + NearestMarginDeg, b.west - NearestMarginDeg, b.east + NearestMarginDeg}
		b.south, b.north = max(b.south, -90), min(b.north, 90)
		b.west, b.east = max(b.west, -180), min(b.east, 180)
		g.extents[k] = b
		if k == 0 {
			g.all = b
		}
		g.all = box{min(g.all.south, b.south), max(g.all.north, b.north), min(g.all.west, b.west), max(g.all.east, b.east)}
	}
	g.rows = int(math.Ceil((g.all.north-g.all.south)/gridCellDeg)) + 1
	g.cols = int(math.Ceil((g.all.east-g.all.west)/gridCellDeg)) + 1
	// Counting sort of the points by cell.
	g.start = make([]int32, g.rows*g.cols+1)
	cells := make([]int32, len(locs))
	n := 0
	for i, l := range locs {
		if l.Postal() {
			cells[i] = -1
			continue
		}
		n++
		c := g.cellOf(l.Lat, l.Lon)
		cells[i] = int32(c)
		g.start[c+1]++
	}
	for c := 1; c < len(g.start); c++ {
		g.start[c] += g.start[c-1]
	}
	next := append([]int32(nil), g.start[:len(g.start)-1]...)
	g.pts = make([]gridPoint, n)
	for i, l := range locs {
		c := cells[i]
		if c < 0 {
			continue
		}
		φ := l.Lat * radPerDeg
		g.pts[next[c]] = gridPoint{φ: φ, λ: l.Lon * radPerDeg, cosφ: math.Cos(φ), i: int32(i)}
		next[c]++
	}
	// A point k rings of cells away differs from the position by more than k-1 cells in latitude or
	// in longitude. A difference in latitude is at least as long on the sphere; one in longitude
	// is shortest at the extent's highest latitude, shrunk by lonShrink.
	poleward := max(math.Abs(g.all.south), math.Abs(g.all.north))
	g.ringKm = lonShrink * math.Cos(poleward*radPerDeg) * gridCellDeg * radPerDeg * EarthRadiusKm
	g.rowCos = make([]float64, g.rows)
	for r := range g.rowCos {
		south := g.all.south + float64(r)*gridCellDeg
		g.rowCos[r] = math.Cos(max(math.Abs(south), math.Abs(south+gridCellDeg)) * radPerDeg)
	}
	return g
}

// cellOf returns the cell of a position inside the grid's extent.
func (g *grid) cellOf(lat, lon float64) int {
	r, c := g.rowCol(lat, lon)
	return r*g.cols + c
}

func (g *grid) rowCol(lat, lon float64) (r, c int) {
	r = min(max(int((lat-g.all.south)/gridCellDeg), 0), g.rows-1)
	c = min(max(int((lon-g.all.west)/gridCellDeg), 0), g.cols-1)
	return r, c
}

// nearest returns the index of the locality nearest to the position and its distance in
// kilometres, looking at the cells ring by ring around the position's cell. A cell, and a point,
// farther than the nearest found so far is passed over unread; once the nearest found so far is
// closer than anything in the next ring can be, no further ring can hold a nearer one.
func (g *grid) nearest(lat, lon float64) (i int32, km float64, ok bool) {
	if !g.covers(lat, lon) {
		return 0, 0, false
	}
	φ, λ := lat*radPerDeg, lon*radPerDeg
	cosφ := math.Cos(φ)
	r0, c0 := g.rowCol(lat, lon)
	best, bestH, bestKm := int32(-1), math.Inf(1), math.Inf(1)
	const kmPerDeg = radPerDeg * EarthRadiusKm
	for ring := 0; ring < max(g.rows, g.cols); ring++ {
		if float64(ring-1)*g.ringKm > bestKm {
			break
		}
		for r := r0 - ring; r <= r0+ring; r++ {
			if r < 0 || r >= g.rows {
				continue
			}
			south := g.all.south + float64(r)*gridCellDeg
			latKm := max(0, south-lat, lat-(south+gridCellDeg)) * kmPerDeg
			if latKm > bestKm {
				continue
			}
			lonKmPerDeg := kmPerDeg * lonShrink * min(cosφ, g.rowCos[r])
			step := 2 * ring // the ring's two sides only, but for its first and last row
			if r == r0-ring || r == r0+ring || step == 0 {
				step = 1
			}
			for c := c0 - ring; c <= c0+ring; c += step {
				if c < 0 || c >= g.cols {
					continue
				}
				west := g.all.west + float64(c)*gridCellDeg
				if max(0, west-lon, lon-(west+gridCellDeg))*lonKmPerDeg > bestKm {
					continue
				}
				cell := r*g.cols + c
				for _, p := range g.pts[g.start[cell]:g.start[cell+1]] {
					if math.Abs(p.φ-φ)*EarthRadiusKm > bestKm {
						continue // farther north or south than the nearest so far
					}
					if h := haversine(φ, cosφ, λ, p.φ, p.cosφ, p.λ); h < bestH {
						best, bestH, bestKm = p.i, h, havKm(h)
					}
				}
			}
		}
	}
	if best < 0 {
		return 0, 0, false
	}
	return best, bestKm, true
}

// covers reports whether a position lies in one of the countries' extents.
func (g *grid) covers(lat, lon float64) bool {
	for _, b := range g.extents {
		if b.contains(lat, lon) {
			return true
		}
	}
	return false
}

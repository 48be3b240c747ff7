package edge

import "net/http"

// Header values that never change are shared, with their keys in canonical form, so a hot response
// sets them without allocating. net/http never changes a value slice, and each has no spare
// capacity, so an append elsewhere copies it.
var (
	keyVary            = http.CanonicalHeaderKey("Vary")
	keyCacheControl    = http.CanonicalHeaderKey("Cache-Control")
	keyContentType     = http.CanonicalHeaderKey("Content-Type")
	keyAudience        = http.CanonicalHeaderKey("X-DIR-Audience")
	keyRateLimit       = http.CanonicalHeaderKey("RateLimit")
	keyRateLimitPolicy = http.CanonicalHeaderKey("RateLimit-Policy")

	varyAcceptEncoding = []string{"Accept-Encoding"}
	varyAPI            = []string{"Authorization, Accept-Encoding"}
	privateNoStore     = []string{"private, no-store"}
	publicCacheControl = []string{"public, s-maxage=60"}
	contentTypeJSON    = []string{"application/json"}
	audiencePublic     = []string{"public"}
)

package dirsvc

// Node roles: serve is primary and edge in one process.
const (
	RoleServe   = "serve"
	RolePrimary = "primary"
	RoleEdge    = "edge"
)

// NodeStatus is what a node reports of itself on its health route: its role, whether it is healthy,
// and the position of each file it replicates or follows.
type NodeStatus struct {
	Role    string       `json:"role"`
	Healthy bool         `json:"healthy"`
	Files   []FileStatus `json:"files,omitempty"`
}

// FileStatus is the replication state of one file of the data folder (for example
// "dirs/demo/directory"): its position (Litestream transaction ID) and, on an edge, how far it lags
// behind the primary.
type FileStatus struct {
	Name       string  `json:"name"`
	Position   uint64  `json:"position"`
	LagSeconds float64 `json:"lagSeconds,omitempty"`
}

// Platform is what an edge needs of the primary's platform file: the directories it serves, with
// the operator's switches, and the public token keys. It carries no client, secret or grant.
type Platform struct {
	Directories []PlatformDirectory `json:"directories"`
	Keys        []SigningKey        `json:"keys"`
}

// PlatformDirectory is one directory of the platform and the switches only the operator sets.
type PlatformDirectory struct {
	Slug                      string `json:"slug"`
	SeniorManagementAvailable bool   `json:"seniorManagementAvailable"`
}

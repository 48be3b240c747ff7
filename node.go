package dirsvc

// Node roles: serve is primary and edge in one process.
const (
	RoleServe   = "serve"
	RolePrimary = "primary"
	RoleEdge    = "edge"
)

// NodeStatus is what a node reports of itself on its health route: its role, whether it is healthy
// and ready, and the position of each file it replicates or follows.
type NodeStatus struct {
	Role    string `json:"role"`
	Healthy bool   `json:"healthy"`
	// Ready is false until every directory the node served when it started (an edge: once it has
	// its first copies) answers every route at its usual cost: open, its search index loaded and
	// its vocabularies read. The node answers 503 on its health route meanwhile. Once true it stays
	// true: a directory added later warms without taking the node out of a load balancer.
	Ready bool `json:"ready"`
	// Warming names, in the full report only, the directories still loading.
	Warming []string     `json:"warming,omitempty"`
	Files   []FileStatus `json:"files,omitempty"`
	// Replication is, on a primary, whether its replicas hold every committed change: a primary
	// stays healthy while it serves (it is the only writer), and says here when a replica is
	// behind.
	Replication *ReplicationStatus `json:"replication,omitempty"`
	// StorageFull is true while the node's storage refuses writes: one was refused for lack of
	// space (or a quota, or a failing disk), and a probe write since failed too. The node is
	// unhealthy meanwhile.
	StorageFull bool `json:"storageFull,omitempty"`
}

// ReplicationStatus is how far a primary's replicas are behind: the replica folder (which edges
// follow) and object storage, each with the longest any file has lacked a committed change, and
// the last error copying one.
type ReplicationStatus struct {
	Healthy           bool    `json:"healthy"`
	FolderLagSeconds  float64 `json:"folderLagSeconds"`
	ObjectStorage     bool    `json:"objectStorage"`
	StorageLagSeconds float64 `json:"storageLagSeconds,omitempty"`
	// Whether the last copy of some file to the folder, or to object storage, failed (the errors
	// are in the log: they may name hosts and paths).
	FolderFailing  bool    `json:"folderFailing,omitempty"`
	StorageFailing bool    `json:"storageFailing,omitempty"`
	MaxLagSeconds  float64 `json:"maxLagSeconds"`
	// DamagedFiles are the LTX files of the replica folder that failed verification (a disk that
	// gave back other bytes than were written). Replication is unhealthy while one has no snapshot
	// past it: until then, neither a restore nor a new edge gets past it.
	DamagedFiles []DamagedReplicaFile `json:"damagedFiles,omitempty"`
}

// DamagedReplicaFile is an LTX file of a primary's replica folder that failed verification: File is
// the replicated file ("dirs/demo/directory"), LTX the LTX file in its replica ("0/<min>-<max>.ltx"),
// and SnapshotPast the position of a snapshot past it, from which restores and edges start (zero
// while there is none).
type DamagedReplicaFile struct {
	File         string `json:"file"`
	LTX          string `json:"ltx"`
	SnapshotPast uint64 `json:"snapshotPast,omitempty"`
}

// FileStatus is the replication state of one file of the data folder (for example
// "dirs/demo/directory"): its position (Litestream transaction ID) and, on an edge, how far it lags
// behind the primary.
type FileStatus struct {
	Name       string  `json:"name"`
	Position   uint64  `json:"position"`
	LagSeconds float64 `json:"lagSeconds,omitempty"`
	// On a primary replicating to object storage: the position the bucket holds, and how long it
	// has lacked a change the folder holds.
	StoredPosition    *uint64 `json:"storedPosition,omitempty"`
	StorageLagSeconds float64 `json:"storageLagSeconds,omitempty"`
	// On an edge: how many of the primary's LTX files of the directory failed verification, and
	// how many times the copy was bootstrapped afresh past such a file (healed) since the edge
	// started.
	FailedVerifications uint64 `json:"failedVerifications,omitempty"`
	Heals               uint64 `json:"heals,omitempty"`
}

// Platform is what an edge needs of the primary's platform file: the directories it serves, with
// the operator's switches, the public token keys (a retired key is no longer listed), and the
// clients' token cut-offs. It carries no client's name, secret or grant.
type Platform struct {
	Directories []PlatformDirectory `json:"directories"`
	Keys        []SigningKey        `json:"keys"`
	Cutoffs     []TokenCutoff       `json:"cutoffs"`
	// BaseURL is the primary's base URL, the issuer of access tokens: an edge configured with
	// another refuses every token, and says so. Empty where it is not known (the bucket's copy).
	BaseURL string `json:"baseURL,omitempty"`
}

// TokenCutoff refuses a client's access tokens issued before ValidFrom (Unix seconds), though they
// have not expired: it is set whenever the client's access changes.
type TokenCutoff struct {
	ClientID  string `json:"clientId"`
	ValidFrom int64  `json:"validFrom"`
}

// PlatformDirectory is one directory of the platform and the switches only the operator sets.
type PlatformDirectory struct {
	Slug                      string `json:"slug"`
	SeniorManagementAvailable bool   `json:"seniorManagementAvailable"`
}

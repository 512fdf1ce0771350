package usersql

// OrgQueued is how many queries hold or wait for org's share of sh's gate.
func OrgQueued(sh *SharedSlot, org string) int {
	g := gateOf(sh)
	g.mu.Lock()
	defer g.mu.Unlock()
	if t := g.sets["org:"+org]; t != nil {
		return t.users
	}
	return 0
}

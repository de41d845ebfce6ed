package loop

import "testing"

func TestEventMemoryReportsEachSituationOnce(t *testing.T) {
	m := NewEventMemory()
	if !m.Due("u", "claim", "ProvisioningFailed", "a") || m.Due("u", "claim", "ProvisioningFailed", "a") {
		t.Error("Due: a first situation is not news, or a repeat is")
	}
	if !m.Due("u", "claim", "ProvisioningFailed", "b") || !m.Due("u", "volume", "ProvisioningFailed", "b") {
		t.Error("Due: a changed situation, or another scope's, is not news")
	}
	m.Forget("u")
	if m.Len() != 0 || !m.Due("u", "claim", "ProvisioningFailed", "b") {
		t.Error("Forget kept something")
	}
}

// Settle replaces a scope's whole set: a slot left out is forgotten, so its
// situation is news when it comes back; an empty set frees the object.
func TestEventMemorySettleReplacesTheScope(t *testing.T) {
	m := NewEventMemory()
	news := m.Settle("u", "claim", map[string]string{"ExternalProvisioning": "x", "NoVolumeFits": "1"})
	if !news["ExternalProvisioning"] || !news["NoVolumeFits"] {
		t.Errorf("first settle: %v", news)
	}
	news = m.Settle("u", "claim", map[string]string{"ExternalProvisioning": "x", "NoVolumeFits": "2"})
	if news["ExternalProvisioning"] || !news["NoVolumeFits"] {
		t.Errorf("second settle: %v", news)
	}
	m.Settle("u", "claim", map[string]string{"NoVolumeFits": "2"})
	if news := m.Settle("u", "claim", map[string]string{"ExternalProvisioning": "x", "NoVolumeFits": "2"}); !news["ExternalProvisioning"] {
		t.Error("a situation that came back is not news")
	}
	m.Settle("u", "claim", nil)
	if m.Len() != 0 {
		t.Errorf("an empty settle kept %d objects", m.Len())
	}
}

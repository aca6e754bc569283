package testsshd_test
import ("testing"; "strings"; "github.com/mu-org/mu-plugins/internal/testsshd")
func TestSmoke(t *testing.T) {
	s := testsshd.Start(t, testsshd.Options{})
	out := s.SSH(t, "id -un; echo $0; ps -o pid,pgid,sid,comm -p $$")
	if !strings.Contains(out, testsshd.TestUser) { t.Fatal(out) }
	t.Log(out)
}

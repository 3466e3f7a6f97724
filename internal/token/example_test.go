package token_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// A ticket is issued at enqueue and verified on every poll, for the room in
// the request path: the same ticket is worthless in another room.
func ExampleTickets() {
	// In the functions the secret is Keys.TicketSecret, from LoadSecretsManager or LoadLocal.
	secret := []byte("example-secret-of-at-least-32-bytes!")
	tickets := token.NewTickets(secret, "vestibule")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	s, err := tickets.Issue(room.Ticket{Room: "demo", Visitor: "v-123", Seq: 42}, now, time.Hour)
	if err != nil {
		fmt.Println(err)
		return
	}

	tk, err := tickets.Verify(s, "demo", now.Add(time.Minute))
	fmt.Println(tk.Room, tk.Visitor, tk.Seq, err)

	_, err = tickets.Verify(s, "other-room", now.Add(time.Minute))
	fmt.Println(errors.Is(err, token.ErrWrongRoom))

	_, err = tickets.Verify(s, "demo", now.Add(2*time.Hour))
	fmt.Println(errors.Is(err, token.ErrExpired))
	// Output:
	// demo v-123 42 <nil>
	// true
	// true
}

// An entry token goes to the booking origin, which can check it offline with
// the JWKS before it consumes the grant (Seq) once through the API.
func ExampleEntries() {
	key, err := token.EntryKeyFromSeed([]byte("a random string from Secrets Manager, 32+ bytes"))
	if err != nil {
		fmt.Println(err)
		return
	}
	entries := token.NewEntries([]*token.EntryKey{key}, "vestibule")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	s, err := entries.Issue(token.EntryClaims{
		Room: "demo", Visitor: "v-123", Seq: 42, Audience: "https://shop.example",
		IssuedAt: now, Expiry: now.Add(2 * time.Minute),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := entries.Verify(s, now.Add(30*time.Second))
	fmt.Println(c.Room, c.Seq, c.Audience, err)
	// Output:
	// demo 42 https://shop.example <nil>
}

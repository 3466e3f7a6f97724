package room_test

import "github.com/vestibule-dev/vestibule/internal/room"

// baseConfig is a valid queue-mode room; tests change what they exercise.
func baseConfig() room.Config {
	c := room.DefaultConfig()
	c.OriginURL = "https://shop.example.com/checkout"
	return c
}

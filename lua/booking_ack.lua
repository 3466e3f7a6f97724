-- booking_ack.lua: order events published; they leave the outbox.
-- KEYS: the event's booking keys (booking_lib.lua)
-- ARGV -> ids ('c<token>', 'x<token>') as booking_outbox.lua returned them
-- Returns {'ok', how many were still there}.
return {'ok', redis.call('ZREM', K_OUT, unpack(ARGV))}

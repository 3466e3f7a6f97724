// A stand-in for CloudFront Functions' 'cloudfront' module, for the parity
// test only: cf.kvs() returns a KeyValueStore handle whose get() reads the
// entries the harness put in globalThis.__vestibuleKVS, counts the reads, and
// throws for a missing key as the real get() does. Nothing else is stubbed:
// the function under test uses node's own crypto, Buffer, RegExp and Date.
export default {
    kvs() {
        return {
            async get(name) {
                const store = globalThis.__vestibuleKVS;
                store.reads++;
                if (!Object.prototype.hasOwnProperty.call(store.entries, name)) {
                    throw new Error('KeyValueStore: key not found: ' + name);
                }
                return store.entries[name];
            }
        };
    }
};

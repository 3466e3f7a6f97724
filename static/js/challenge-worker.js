// The join challenge's search, off the page's thread (see challenge.js).
import { search } from './challenge.js';

self.onmessage = e => {
  const { value, bits } = e.data;
  self.postMessage(search(value, bits));
};

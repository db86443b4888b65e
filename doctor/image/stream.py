"""A forward-only byte stream as a file tarfile can read (and seek forward in)."""

from __future__ import annotations

from typing import Iterable, Iterator


class ChunkReader:
    """A file-like view of an iterator of byte chunks (what docker-py's export yields).

    Reads hand out slices of the current chunk through an offset, so a stream of N bytes
    costs O(N) copying whatever the read size (tarfile asks for small blocks). It can also
    seek *forward*: skipped bytes are dropped chunk by chunk, never copied, which lets
    tarfile's random-access mode ("r:") step over the gigabytes of file data the probes
    never read at the speed the stream arrives (its stream mode, "r|", copies every byte
    three times on the way past)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)
        self._chunk = b""
        self._offset = 0
        self._position = 0  # bytes of the stream consumed so far

    def tell(self) -> int:
        return self._position

    def seekable(self) -> bool:
        return True  # forward only; tarfile never seeks back while iterating

    def seek(self, position: int, whence: int = 0) -> int:
        if whence == 1:
            position += self._position
        elif whence != 0:
            raise OSError("a stream cannot seek from its end")
        skip = position - self._position
        if skip < 0:
            if -skip > self._offset:
                raise OSError(f"a stream cannot seek back {-skip} bytes")
            self._offset += skip  # back within the current chunk
            self._position = position
            return position
        while skip > 0:
            left = len(self._chunk) - self._offset
            if left >= skip:
                self._offset += skip
                break
            skip -= left
            self._position += left
            try:
                self._chunk, self._offset = next(self._chunks), 0
            except StopIteration:
                self._chunk, self._offset = b"", 0
                return self._position
        self._position = position
        return position

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            parts = [self._chunk[self._offset:], *self._chunks]
            self._chunk, self._offset = b"", 0
            data = b"".join(parts)
            self._position += len(data)
            return data
        parts: list[bytes] = []
        while size > 0:
            if self._offset >= len(self._chunk):
                try:
                    self._chunk, self._offset = next(self._chunks), 0
                except StopIteration:
                    break
                continue
            piece = self._chunk[self._offset:self._offset + size]
            self._offset += len(piece)
            self._position += len(piece)
            size -= len(piece)
            parts.append(piece)
        return parts[0] if len(parts) == 1 else b"".join(parts)

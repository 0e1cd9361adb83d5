"""Waiting on I/O: a socket, an HTTP or gRPC call, cloud storage, or a subprocess."""

from __future__ import annotations

from tpudoctor.hang.rule import (
    SITE,
    STDLIB,
    Category,
    HangRule,
    Match,
    ThreadView,
    in_files,
    stack_example,
)

FILES = ("/socket.py", "/ssl.py", "/http/client.py", "/urllib3/", "/requests/", "/grpc/", "/google/cloud/storage/",
         "/google/api_core/", "/google/resumable_media/", "/gcsfs/", "/fsspec/", "/subprocess.py", "/selectors.py",
         "/asyncio/", "/multiprocessing/connection.py", "/multiprocessing/popen_fork.py")


class IoWait(HangRule):
    """Fallback: the thread waits on I/O that no other rule places: a socket read, an HTTP or gRPC call,
    Cloud Storage, ``fsspec``, a subprocess."""

    id = "io-wait"
    category = Category.IO
    rank = 50
    fallback = True
    docs = "https://cloud.google.com/storage/docs/retry-strategy"
    examples = (
        stack_example("a GCS download", (f"SocketIO.readinto ({STDLIB}socket.py:706)",
                                       f"Blob.download_as_bytes ({SITE}google/cloud/storage/blob.py:1453)",
                                       "fetch (util.py:20)"), matches=True),
        stack_example("no I/O frame", ("fetch (util.py:20)",), matches=False),
    )

    def match(self, thread: ThreadView) -> Match | None:
        found = self.first_frame(thread, lambda f: not f.native and in_files(f, FILES), python_only=True)
        if found is None:
            return None
        user = next((f for f in thread.frames[found.depth:] if not in_files(f, FILES)), found.frame)
        return Match(frame=user, depth=found.depth, detail=f"waits on I/O in {found.frame.function}")

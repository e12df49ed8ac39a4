"""Counts of work in flight, shared by every process, that a crash cannot leak (issue 68).

Some work is bounded by how much of it is under way at once, not by how often it is asked
for: chats holding web threads (serving.chat_slots), reward previews on the workers' queue
(runs.services). `take` adds one piece of work to several counts at once (an account's and
the site's, say), each with its cap, or to none when any is full; the work's `Lease` gives
its place back when it ends.

The counts live in Redis, through Django's cache (Redis in every environment), under the
cache's key prefix. Each count is a sorted set of leases: a member per piece of work (a
random id), scored by the time its lease runs out. The lease outlives any piece of work
that ends normally, so `release` removes it long before; work that never releases (its
process killed) leaves a lease that the next `take` drops once its time has passed. A plain
counter with a TTL would not do: each new piece of work would push the TTL back, and a place
leaked by a crash would stay taken for as long as work keeps coming. One Lua script drops
the run-out leases, counts and adds, so two processes never both take the last place.

With the cache unreachable `take` answers None (nothing counted) and the caller lets the
work through and logs it, as the rate limits do (core.ratelimit): a counter whose store is
down must not refuse every request.
"""

import logging
import time
import uuid
from dataclasses import dataclass

from django.core.cache import cache
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

# KEYS: the counts. ARGV: now, when the new lease runs out, its id, the sets' own expiry
# (ms: an idle count's set goes), then each count's cap in KEYS' order.
# Returns {0 taken | the 1-based index of the first full count, then each count's size}.
_TAKE = """
local now = tonumber(ARGV[1])
local sizes = {}
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  sizes[i] = redis.call('ZCARD', key)
end
for i = 1, #KEYS do
  if sizes[i] >= tonumber(ARGV[4 + i]) then return {i, unpack(sizes)} end
end
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, ARGV[2], ARGV[3])
  redis.call('PEXPIRE', key, ARGV[4])
  sizes[i] = sizes[i] + 1
end
return {0, unpack(sizes)}
"""


def _client():
    # Django's RedisCache keeps its redis-py client behind `_cache`; sorted sets need
    # commands the cache API does not have. Keys go through make_key, so they share the
    # cache's prefix and database (and cache.clear() empties them with the rest).
    return cache._cache.get_client(write=True)


def key(name: str) -> str:
    """The Redis key of the count `name`."""
    return cache.make_key(f"leases:{name}")


class Full(Exception):
    """The count at `index` (in the order given to `take`) has `cap` in flight already."""

    def __init__(self, index: int, in_flight: int, cap: int):
        super().__init__(f"count {index}: {in_flight} of {cap} in flight")
        self.index, self.in_flight, self.cap = index, in_flight, cap


@dataclass
class Lease:
    """One piece of work's place in each of `keys`; `release` gives it back (again:
    nothing). Kept as plain data, so another request can release it (`Lease(*saved)`)."""

    keys: tuple[str, ...] | None
    member: str

    def release(self) -> None:
        keys, self.keys = self.keys, None
        if not keys:
            return
        try:
            pipe = _client().pipeline()
            for name in keys:
                pipe.zrem(name, self.member)
            pipe.execute()
        except RedisError:
            # The lease runs out by itself.
            logger.error("a lease was not released: the cache is unreachable")


def take(counts: list[tuple[str, int]], lease_seconds: float) -> Lease | None:
    """A place in every count of `counts` ((key, cap) pairs), held for at most
    `lease_seconds`; Full for the first count already at its cap (nothing taken); None
    when the cache is unreachable (nothing counted)."""
    keys = tuple(name for name, _ in counts)
    member = uuid.uuid4().hex
    # The hosts' clocks score the leases: a few seconds' skew against a lease of minutes
    # only moves when a crashed piece of work's place comes back.
    now = time.time()
    try:
        full, *sizes = _client().eval(
            _TAKE,
            len(keys),
            *keys,
            repr(now),
            repr(now + lease_seconds),
            member,
            int(lease_seconds * 1000) + 1000,
            *(cap for _, cap in counts),
        )
    except RedisError:
        return None
    if full:
        raise Full(full - 1, int(sizes[full - 1]), counts[full - 1][1])
    return Lease(keys=keys, member=member)


def in_flight(*keys: str) -> list[int]:
    """Each count's leases that have not run out."""
    now = time.time()
    pipe = _client().pipeline()
    for name in keys:
        pipe.zcount(name, f"({now!r}", "+inf")
    return [int(size) for size in pipe.execute()]

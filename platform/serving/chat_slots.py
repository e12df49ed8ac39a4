"""How many /v1 chats are in flight, per account and on the whole site (issue 68, item 1).

A chat holds a web thread until its answer comes or SLEUTH_INFERENCE_TIMEOUT passes; the web
server has few threads (the image: 2 gunicorn workers x 4), so one token's chats could hold
them all and leave none for anyone's pages. `acquire` takes one of the account's
SLEUTH_CHATS_IN_FLIGHT_PER_ACCOUNT slots and one of the site's SLEUTH_CHATS_IN_FLIGHT (set
below the web threads), or says which is full; the chat gives its slot back when it ends.
The site's count is one for all web processes, so a chat also takes one of its own process's
SLEUTH_CHATS_IN_FLIGHT_PER_PROCESS turns (one thread fewer than the process has): otherwise
the site's slots could all land in one gunicorn process, whose pages would then wait for a
free thread while the other process idles. That count is the process's own, in memory, and
holds with the cache down too.

The slots are counted in Redis, through Django's cache (Redis in every environment), so every
web process shares one count. Each count is a sorted set of leases: a member per chat (a
random id), scored by the time its lease runs out. A lease outlives any chat that ends
normally (the wait for an answer is bounded by SLEUTH_INFERENCE_TIMEOUT; LEASE_MARGIN_SECONDS
covers the rest of the request), so `release` removes it long before; a request that never
releases (its process killed) leaves a lease that the next `acquire` drops once its time has
passed. A plain counter with a TTL would not do: every new chat would push the TTL back, and
a slot leaked by a crash would stay taken for as long as chats keep coming. One Lua script
drops the run-out leases, counts and adds, so two web threads never both take the last slot.

With the cache unreachable the chat is let through and the outage logged, as the rate
limits do (core.ratelimit): a counter whose store is down must not refuse every chat.

The playground's questions (serving.playground) take the account's slots too (`site=False`):
they go to the same inference queue, so an account's /v1 chats and playground questions
together have at most its cap in that queue, and one customer cannot flood it for everyone.
They hold no web thread (the page polls), so they leave the site's count, which guards the
threads, alone; their slot is given back when a poll finds the answer, the failure or the
timeout, or runs out by itself if nobody polls again.
"""

import logging
import threading
import time
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

# Seconds a lease outlives SLEUTH_INFERENCE_TIMEOUT: the request's work around the wait
# (enqueueing, writing the answer, a stream's last chunks to a slow client).
LEASE_MARGIN_SECONDS = 30.0

# What a refused client is told to wait: chats usually end within seconds, and the openai
# client honours Retry-After when it retries a 429 by itself.
RETRY_AFTER_SECONDS = 5

# KEYS: the account's leases, then the site's unless the chat holds no web thread (the
# playground's). ARGV: now, when the new lease runs out, its id, the account's cap, the
# site's cap, the sets' own expiry (ms: an idle account's set goes).
# Returns {0 taken | 1 account full | 2 site full, the account's chats, the site's chats}.
_ACQUIRE = """
local now = tonumber(ARGV[1])
for _, key in ipairs(KEYS) do redis.call('ZREMRANGEBYSCORE', key, '-inf', now) end
local mine = redis.call('ZCARD', KEYS[1])
local site = 0
if #KEYS > 1 then site = redis.call('ZCARD', KEYS[2]) end
if mine >= tonumber(ARGV[4]) then return {1, mine, site} end
if #KEYS > 1 and site >= tonumber(ARGV[5]) then return {2, mine, site} end
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, ARGV[2], ARGV[3])
  redis.call('PEXPIRE', key, ARGV[6])
end
return {0, mine + 1, site + #KEYS - 1}
"""


def _client():
    # Django's RedisCache keeps its redis-py client behind `_cache`; the sorted sets need
    # commands the cache API does not have. Keys go through make_key, so they share the
    # cache's prefix and database (and cache.clear() empties them with the rest).
    return cache._cache.get_client(write=True)


def _keys(account_id) -> tuple[str, str]:
    return cache.make_key(f"chats:account:{account_id}"), cache.make_key("chats:site")


class ChatsInFlight(Exception):
    """The account's, the site's or this web process's slots are all taken (`full` says
    which: "account", "site" or "process")."""

    def __init__(self, *, full: str, in_flight: int, cap: int):
        super().__init__(f"{full}: {in_flight} of {cap} in flight")
        self.full, self.in_flight, self.cap = full, in_flight, cap
        self.retry_after = RETRY_AFTER_SECONDS


class _ProcessTurns:
    """This process's chats holding one of its web threads. A count under a lock rather than
    a Semaphore: the cap is read from the settings at each take, as the others are."""

    def __init__(self):
        self._lock = threading.Lock()
        self.taken = 0

    def take(self) -> None:
        cap = settings.SLEUTH_CHATS_IN_FLIGHT_PER_PROCESS
        with self._lock:
            if self.taken >= cap:
                raise ChatsInFlight(full="process", in_flight=self.taken, cap=cap)
            self.taken += 1

    def give_back(self) -> None:
        with self._lock:
            self.taken -= 1


_process_turns = _ProcessTurns()


@dataclass
class Slot:
    """One chat's place in its account's and the site's count, and its turn among this
    process's threads (`holds_thread`); `release` gives them back (again: nothing). A slot
    not counted in the cache (it was down) gives back its process turn only."""

    keys: tuple[str, ...] | None
    member: str
    holds_thread: bool = False

    def release(self) -> None:
        if self.holds_thread:
            self.holds_thread = False
            _process_turns.give_back()
        keys, self.keys = self.keys, None
        if keys is None:
            return
        try:
            pipe = _client().pipeline()
            for key in keys:
                pipe.zrem(key, self.member)
            pipe.execute()
        except RedisError:
            # The lease runs out by itself (LEASE_MARGIN_SECONDS after the timeout).
            logger.error("chat slot not released: the cache is unreachable")


def acquire(account_id, *, site: bool = True) -> Slot:
    """A slot for one chat of `account_id`; ChatsInFlight when its account, the site or this
    process already has its cap in flight. `site=False`: a chat that holds no web thread (the
    playground's), counted against its account's cap only."""
    if site:
        _process_turns.take()
    try:
        return _acquire_counted(account_id, site=site)
    except BaseException:
        if site:
            _process_turns.give_back()
        raise


def _acquire_counted(account_id, *, site: bool) -> Slot:
    per_account = settings.SLEUTH_CHATS_IN_FLIGHT_PER_ACCOUNT
    site_cap = settings.SLEUTH_CHATS_IN_FLIGHT
    lease = float(settings.SLEUTH_INFERENCE_TIMEOUT) + LEASE_MARGIN_SECONDS
    keys = _keys(account_id) if site else _keys(account_id)[:1]
    member = uuid.uuid4().hex
    # The web hosts' clocks score the leases: a few seconds' skew against a lease of
    # minutes only moves when a crashed chat's slot comes back.
    now = time.time()
    try:
        taken, mine, site_chats = _client().eval(
            _ACQUIRE,
            len(keys),
            *keys,
            repr(now),
            repr(now + lease),
            member,
            per_account,
            site_cap,
            int(lease * 1000) + 1000,
        )
    except RedisError:
        logger.error("chat slots not counted: the cache is unreachable")
        return Slot(keys=None, member=member, holds_thread=site)
    if taken == 1:
        raise ChatsInFlight(full="account", in_flight=int(mine), cap=per_account)
    if taken == 2:
        raise ChatsInFlight(full="site", in_flight=int(site_chats), cap=site_cap)
    return Slot(keys=keys, member=member, holds_thread=site)


def in_flight(account_id) -> tuple[int, int]:
    """(the account's chats in flight, the site's), leases run out not counted."""
    now = time.time()
    pipe = _client().pipeline()
    for key in _keys(account_id):
        pipe.zcount(key, f"({now!r}", "+inf")
    mine, site = pipe.execute()
    return int(mine), int(site)

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

The account's and the site's slots are leases in Redis (core.leases), so every web process
shares one count and a slot a crashed request held comes back by itself once its lease, the
timeout plus LEASE_MARGIN_SECONDS, runs out. With the cache unreachable the chat is let
through and the outage logged, as the rate limits do (core.ratelimit).

The playground's questions (serving.playground) take the account's slots too (`site=False`):
they go to the same inference queue, so an account's /v1 chats and playground questions
together have at most its cap in that queue, and one customer cannot flood it for everyone.
They hold no web thread (the page polls), so they leave the site's count, which guards the
threads, alone; their slot is given back when a poll finds the answer, the failure or the
timeout, or runs out by itself if nobody polls again.
"""

import logging
import threading
from dataclasses import dataclass

from django.conf import settings

from core import leases

logger = logging.getLogger(__name__)

# Seconds a lease outlives SLEUTH_INFERENCE_TIMEOUT: the request's work around the wait
# (enqueueing, writing the answer, a stream's last chunks to a slow client).
LEASE_MARGIN_SECONDS = 30.0

# What a refused client is told to wait: chats usually end within seconds, and the openai
# client honours Retry-After when it retries a 429 by itself.
RETRY_AFTER_SECONDS = 5


def _keys(account_id) -> tuple[str, str]:
    return leases.key(f"chats:account:{account_id}"), leases.key("chats:site")


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
        leases.Lease(keys=keys, member=self.member).release()


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
    account_key, site_key = _keys(account_id)
    counts = [(account_key, settings.SLEUTH_CHATS_IN_FLIGHT_PER_ACCOUNT)]
    if site:
        counts.append((site_key, settings.SLEUTH_CHATS_IN_FLIGHT))
    lease_seconds = float(settings.SLEUTH_INFERENCE_TIMEOUT) + LEASE_MARGIN_SECONDS
    try:
        lease = leases.take(counts, lease_seconds)
    except leases.Full as full:
        which = ("account", "site")[full.index]
        raise ChatsInFlight(full=which, in_flight=full.in_flight, cap=full.cap) from None
    if lease is None:
        logger.error("chat slots not counted: the cache is unreachable")
        return Slot(keys=None, member="", holds_thread=site)
    return Slot(keys=lease.keys, member=lease.member, holds_thread=site)


def in_flight(account_id) -> tuple[int, int]:
    """(the account's chats in flight, the site's), leases run out not counted."""
    return tuple(leases.in_flight(*_keys(account_id)))

"""Server replicas that share their engines' slots through Valkey or Redis.

Each replica runs its own :class:`~sdk.scheduler.Scheduler` over its own requests; what
the replicas share is the engines' slots, as **leases** counted in Valkey. A replica
may run as many requests as it holds leases (the scheduler's
:meth:`~sdk.scheduler.Scheduler.set_share`); every decision about the shared count is
one Lua script, run atomically by the server, with the server's clock (``TIME``):

- ``acquire``: a replica whose best waiting request waits only for a slot records its
  **want** (that request's level, and since when) and takes a lease if one is free and
  no other replica wants one more urgently: a better level, or the same level wanted
  earlier. Free leases always go to the best want first, so the order of admission
  across replicas follows the tiers (and aging, which raises a waiting request's level).
- a want that gets no lease is told to the replicas that hold leases (a message in each
  one's **inbox**, a list it waits on with ``BLPOP``). Each holder puts a **ghost** in
  its own scheduler: a request of the want's level, of the tenant :data:`GHOST_TENANT`,
  that never runs. The holder's scheduler treats it as one of its own: it preempts a
  stream of a worse level for it (the want of an interactive request pauses another
  replica's batch stream), or gives it its fair turn at the same level. When the ghost
  is admitted, the holder hands its lease over (``handoff``), and the wanting replica
  finds a grant in its inbox.
- ``release`` gives back leases nobody local waits for, to the best want first.
- ``beat`` renews the replica's liveness (every ``ttl / 3`` s). A replica that misses
  ``ttl`` s of beats is dead: its leases and wants are dropped and go to others, so a
  killed replica's slots come back within ``ttl``.

Round trips: an admission at an idle fleet costs one ``acquire`` and, when the request
ends with nothing waiting, one ``release``; a contended one adds the holder's
``handoff``. Each is one script, well under a millisecond on a local Valkey.

**Valkey away.** A script that fails or takes longer than ``timeout`` puts the replica in
degraded mode: it logs it once, runs alone on ``degraded_share`` of the slots (its
scheduler preempts what runs beyond that), counts the time in ``/metrics``, and tries to
re-join every second. Re-joining writes the replica's true count of running requests.
A Valkey that lost its data (restarted without persistence) has no fleet **epoch**: the
first replica to re-join writes one and the fleet settles for one lease time, handing out
no lease while the others, which ran alone meanwhile, re-join with their counts; so once
Valkey is back nothing is admitted beyond the engines' slots.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import anyio

from .._errors import SDKError
from ..scheduler import Cost, Decisions, Scheduler, Ticket, TicketState

if TYPE_CHECKING:
    from .._dispatch import Dispatcher

__all__ = ["GHOST_TENANT", "FleetAdmission", "FleetLink", "FleetUnavailable", "fleet_name"]

log = logging.getLogger("sdk.server")

GHOST_TENANT = "(fleet)"  # not a configured tenant's name: those have no parentheses

# The scripts' shared part. KEYS[1] is the fleet's key prefix; ARGV[1] the replica,
# ARGV[2] the engines' slots, ARGV[3] the lease time-to-live (ms), ARGV[4] the leases the
# caller holds by its own count. Every script first drops the replicas that missed their
# beats, then renews the caller's; a caller found dropped (its beat came late) is taken
# back with its own count, since its requests still run.
_COMMON = """
local P = KEYS[1]
local me = ARGV[1]
local slots = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function forget(r)
  redis.call('HDEL', P..'held', r)
  redis.call('HDEL', P..'want', r)
  redis.call('HDEL', P..'since', r)
  redis.call('HDEL', P..'told', r)
  redis.call('DEL', P..'inbox:'..r)
  redis.call('ZREM', P..'alive', r)
end
for _, r in ipairs(redis.call('ZRANGEBYSCORE', P..'alive', '-inf', now)) do forget(r) end
if redis.call('ZADD', P..'alive', now + ttl, me) == 1 then
  redis.call('HSET', P..'held', me, tonumber(ARGV[4]))
end
local function held(r) return tonumber(redis.call('HGET', P..'held', r) or '0') end
local function total()
  local s = 0
  for _, v in ipairs(redis.call('HVALS', P..'held')) do s = s + tonumber(v) end
  return s
end
local function best()
  local w = redis.call('HGETALL', P..'want')
  local lvl, since, who = nil, nil, nil
  for i = 1, #w, 2 do
    local l = tonumber(w[i + 1])
    local s = tonumber(redis.call('HGET', P..'since', w[i]) or '0')
    if lvl == nil or l < lvl or (l == lvl and s < since) then lvl, since, who = l, s, w[i] end
  end
  return who, lvl
end
local function unwant(r)
  redis.call('HDEL', P..'want', r)
  redis.call('HDEL', P..'since', r)
  redis.call('HDEL', P..'told', r)
end
-- A want's age counts at its level: one that rises (a better request, or aging) is new there.
local function want(r, level)
  local old = redis.call('HGET', P..'want', r)
  if old == false or tonumber(old) ~= level then
    redis.call('HSET', P..'want', r, level)
    if old == false or tonumber(old) > level then redis.call('HSET', P..'since', r, now) end
  end
end
-- Free leases to the best wants, one each; a grant to another replica goes to its inbox.
local function distribute()
  local mine = 0
  if redis.call('EXISTS', P..'settling') == 1 then return 0 end
  while total() < slots do
    local who = best()
    if who == nil then break end
    redis.call('HINCRBY', P..'held', who, 1)
    unwant(who)
    if who == me then mine = mine + 1 else
      redis.call('RPUSH', P..'inbox:'..who, 'grant')
      redis.call('PEXPIRE', P..'inbox:'..who, ttl)
    end
  end
  return mine
end
-- Tell the holders of leases about a want they could give a lease to, once per level.
local function tell(r, level)
  local told = redis.call('HGET', P..'told', r)
  if told ~= false and tonumber(told) <= level then return end
  redis.call('HSET', P..'told', r, level)
  local h = redis.call('HGETALL', P..'held')
  for i = 1, #h, 2 do
    if h[i] ~= r and tonumber(h[i + 1]) > 0 then
      redis.call('RPUSH', P..'inbox:'..h[i], 'want:'..level)
      redis.call('PEXPIRE', P..'inbox:'..h[i], ttl)
    end
  end
end
"""

# ARGV[5]: the level of the caller's best waiting request. Returns 1: a lease is the
# caller's; 0: its want is recorded and told.
_ACQUIRE = (
    _COMMON
    + """
local level = tonumber(ARGV[5])
want(me, level)
if distribute() > 0 then return 1 end
tell(me, level)
return 0
"""
)

# ARGV[5]: leases given back; ARGV[6]: the caller's want now (-1: none). Returns the
# leases granted back to the caller (its own want may be the best).
_RELEASE = (
    _COMMON
    + """
local n = tonumber(ARGV[5])
local level = tonumber(ARGV[6])
if n > 0 then redis.call('HSET', P..'held', me, math.max(0, held(me) - n)) end
if level < 0 then unwant(me) else want(me, level) end
local mine = distribute()
if level >= 0 and mine == 0 then tell(me, level) end
return mine
"""
)

# ARGV[5]: the level of the caller's admitted ghost. Returns 1 when another replica
# wanted a lease at that level or better and the caller's is given back for it.
_HANDOFF = (
    _COMMON
    + """
local level = tonumber(ARGV[5])
local who, lvl = best()
if who == nil or who == me or lvl > level then return 0 end
redis.call('HSET', P..'held', me, math.max(0, held(me) - 1))
distribute()
return 1
"""
)

# ARGV[5]: the caller's count of running requests, written over the stored one when
# ARGV[7] is 1 (a join) or 2 (a re-join after running alone, which settles a fleet whose
# server lost its data); the inbox's old messages are dropped with it. ARGV[6]: its
# want (-1: none). Returns {leases granted to the caller, the best level another replica
# wants (-1: none), leases held in the fleet, replicas alive, wants per level (a flat
# list of level, count)}.
_BEAT = (
    _COMMON
    + """
local running = tonumber(ARGV[5])
local level = tonumber(ARGV[6])
if ARGV[7] ~= '0' then
  redis.call('HSET', P..'held', me, running)
  redis.call('DEL', P..'inbox:'..me)
  redis.call('HDEL', P..'told', me)
  if redis.call('SET', P..'epoch', now, 'NX') and ARGV[7] == '2' then
    -- A re-join finds no epoch: the server lost its data. The replicas that ran alone
    -- meanwhile re-join within a lease's time; until then no lease is handed out.
    redis.call('SET', P..'settling', 1, 'PX', ttl)
  end
end
if level < 0 then unwant(me) else want(me, level) end
local mine = distribute()
local other = -1
local per = {}
local w = redis.call('HGETALL', P..'want')
for i = 1, #w, 2 do
  local l = tonumber(w[i + 1])
  per[l] = (per[l] or 0) + 1
  if w[i] ~= me and (other < 0 or l < other) then other = l end
end
local flat = {}
for l, c in pairs(per) do table.insert(flat, l); table.insert(flat, c) end
return {mine, other, total(), redis.call('ZCARD', P..'alive'), flat}
"""
)


# A replica that stops: its leases and wants go to the others at once.
_LEAVE = (
    _COMMON
    + """
forget(me)
distribute()
return 1
"""
)


class FleetUnavailable(SDKError):
    """The shared state (Valkey/Redis) did not answer in time, or refused."""


def fleet_name(upstreams: Sequence[str]) -> str:
    """The default fleet: replicas in front of the same engines (by their URLs) share one."""
    joined = "\n".join(sorted(u.rstrip("/").lower() for u in upstreams))
    return hashlib.sha256(joined.encode()).hexdigest()[:16]


class FleetLink:
    """The replica's connections to Valkey/Redis (through the ``redis`` package, its
    blocking client in worker threads: the calls are short, and it runs under any event
    loop). ``url``: ``redis://[:password@]host:port/db`` (``valkey://``, ``rediss://``
    and ``valkeys://`` too). Errors come out as :class:`FleetUnavailable`, scrubbed of
    the password."""

    def __init__(self, url: str, *, fleet: str, replica: str, timeout: float = 0.5) -> None:
        try:
            import redis
        except ImportError:  # pragma: no cover - the optional extra is missing
            raise ImportError("--state needs the redis client: pip install 'seam-sdk[redis]'") from None
        parts = urlsplit(url)
        scheme = {"valkey": "redis", "valkeys": "rediss"}.get(parts.scheme.lower(), parts.scheme.lower())
        if scheme not in ("redis", "rediss", "unix"):
            raise ValueError(
                f"--state: a redis://, rediss://, valkey:// or valkeys:// URL, not {parts.scheme!r}"
            )
        self._password = unquote(parts.password) if parts.password else None
        query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
        self._password = dict(query).get("password", self._password)
        target = urlunsplit((scheme, parts.netloc, parts.path, urlencode(query), ""))
        host = parts.hostname or "localhost"
        self.url = urlunsplit((parts.scheme.lower(), f"{host}:{parts.port or 6379}", parts.path, "", ""))
        self.timeout = timeout
        self.listen_timeout = 1.0
        self._r = redis.Redis.from_url(target, socket_timeout=timeout, socket_connect_timeout=timeout)
        self._listen = redis.Redis.from_url(
            target, socket_timeout=self.listen_timeout + timeout, socket_connect_timeout=timeout
        )
        self._error = (redis.RedisError, OSError)
        self.prefix = f"seam:fleet:{{{fleet}}}:"
        self.replica = replica
        self.round_trips = 0
        self._scripts = {
            name: self._r.register_script(src)
            for name, src in (
                ("acquire", _ACQUIRE),
                ("release", _RELEASE),
                ("handoff", _HANDOFF),
                ("beat", _BEAT),
                ("leave", _LEAVE),
            )
        }

    def _scrub(self, e: BaseException) -> FleetUnavailable:
        text = f"{type(e).__name__}: {e}"
        if self._password:
            text = text.replace(self._password, "***")
        return FleetUnavailable(f"{self.url}: {text}")

    async def _call(self, fn: Callable[[], Any]) -> Any:
        self.round_trips += 1
        try:
            with anyio.fail_after(self.timeout * 2 + 0.5):  # beyond the socket's own timeouts
                return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
        except TimeoutError as e:
            raise self._scrub(e) from None
        except self._error as e:
            raise self._scrub(e) from None

    async def script(self, name: str, slots: int, ttl: float, held: int, *args: int) -> Any:
        """Run one of the fleet's scripts for this replica, which holds ``held`` leases
        by its own count."""
        fn = self._scripts[name]
        argv: list[str | int] = [self.replica, slots, max(1, int(ttl * 1000)), held, *args]
        return await self._call(lambda: fn(keys=[self.prefix], args=argv))

    async def run(self, fn: Callable[[Any], Any]) -> Any:
        """``fn(client)`` in a worker thread (another script of the server's, a read)."""
        return await self._call(lambda: fn(self._r))

    async def listen(self, fn: Callable[[Any], Any]) -> Any:
        """``fn(client)`` for a blocking read of up to ``listen_timeout`` seconds."""
        self.round_trips += 1
        try:
            with anyio.fail_after(self.listen_timeout + self.timeout * 2 + 0.5):
                return await anyio.to_thread.run_sync(lambda: fn(self._listen), abandon_on_cancel=True)
        except TimeoutError as e:
            raise self._scrub(e) from None
        except self._error as e:
            raise self._scrub(e) from None

    async def inbox(self) -> list[str]:
        """The messages for this replica: waits up to ``listen_timeout`` for the first."""
        key = f"{self.prefix}inbox:{self.replica}"
        timeout = self.listen_timeout

        def pop() -> list[str]:
            got = cast("tuple[bytes, bytes] | None", self._listen.blpop([key], timeout=timeout))
            if got is None:
                return []
            more = cast("list[bytes] | None", self._listen.lpop(key, 64))
            return [m.decode() for m in (got[1], *(more or ()))]

        try:
            return list(await anyio.to_thread.run_sync(pop, abandon_on_cancel=True))
        except self._error as e:
            raise self._scrub(e) from None

    def close(self) -> None:
        for c in (self._r, self._listen):
            with contextlib.suppress(Exception):  # closing a connection that is gone
                c.close()


class FleetAdmission:
    """The replica's side of shared admission (see the module doc): it keeps the
    scheduler's share equal to the leases it holds, asks for leases for the requests
    that wait for a slot, gives back the ones nobody local waits for, and hands leases
    to other replicas through ghosts.

    ``slots()``: the engines' slot count now (learnt or configured). The host calls
    :meth:`observe` with every :class:`~sdk.scheduler.Decisions` (the dispatcher's
    observer) and runs :meth:`run` in a task for the replica's life."""

    def __init__(
        self,
        link: FleetLink,
        dispatcher: Dispatcher,
        slots: Callable[[], int],
        *,
        ttl: float = 3.0,
        degraded_share: float = 0.5,
    ) -> None:
        if not ttl > 0 or not 0 < degraded_share <= 1:
            raise ValueError("need ttl > 0 and 0 < degraded_share <= 1")
        self.link = link
        self.dispatcher = dispatcher
        self.scheduler: Scheduler = dispatcher.scheduler
        self.slots = slots
        self.ttl = ttl
        self.degraded_share = degraded_share
        self.held = 0  # leases the fleet counts for this replica
        self.degraded = True  # until the first beat answers
        self.degraded_since: float | None = None
        self.degraded_seconds = 0.0
        self.joined = False
        self._told_down = False
        self._asked: int | None = None  # the want last recorded in the fleet
        self._ghosts: dict[int, Ticket] = {}
        self._handoffs: list[Ticket] = []
        self._kick = anyio.Event()
        self._last_beat = -math.inf
        self.fleet_held = 0
        self.fleet_replicas = 0
        self.fleet_wants: dict[int, int] = {}
        self.handoffs = 0
        self.grants = 0
        self.scheduler.set_share(self._degraded_slots())
        dispatcher.observers.append(self.observe)

    # ---- what the local scheduler shows ----------------------------------------------

    def _degraded_slots(self) -> int:
        return max(1, math.floor(self.degraded_share * max(1, self.slots())))

    def _running(self) -> int:
        """Requests of this replica's own that hold a slot (ghosts excluded)."""
        ghosts = sum(t.state in (TicketState.RUNNING, TicketState.PREEMPTING) for t in self._ghosts.values())
        return self.scheduler.running - ghosts

    def running(self) -> int:
        """Requests of this replica's own that run and are not being paused: never more
        than :attr:`held` (a stream asked to pause is on its way out)."""
        ghosts = sum(t.state is TicketState.RUNNING for t in self._ghosts.values())
        return self.scheduler.running - self.scheduler.preempting - ghosts

    def _want(self) -> int | None:
        """The level of the best request of this replica's own that waits only for a
        slot, or None."""
        sched = self.scheduler
        levels = list(sched.waiting_by_level())
        for g in self._ghosts.values():
            if g.state is TicketState.WAITING and g.level < len(levels):
                levels[g.level] -= 1
        best = next((i for i, n in enumerate(levels) if n > 0), None)
        if best is None or sched.running < sched.capacity():
            return None
        return best

    def _set_share(self) -> None:
        self.scheduler.set_share(self.held)
        self.dispatcher.drive()

    # ---- the host's hooks ----------------------------------------------------------

    def observe(self, d: Decisions) -> None:
        """Every poll's decisions: admitted ghosts are handed off; anything may change
        the want, so the keeper looks again."""
        for t in d.admit:
            if t.tenant == GHOST_TENANT and t.id in self._ghosts:
                self._handoffs.append(t)
        self._kick.set()

    def _ghost(self, level: int) -> None:
        """A want at ``level`` elsewhere: one ghost at that level or better is enough."""
        if self.degraded or self.held == 0:
            return
        if any(g.state is TicketState.WAITING and g.level <= level for g in self._ghosts.values()):
            return
        tiers = list(self.scheduler.tiers)
        tier = tiers[min(level, len(tiers) - 1)]
        t = self.scheduler.submit(
            self.dispatcher.now(), tier=tier, tenant=GHOST_TENANT, cost=Cost(), preemptible=False
        )
        self._ghosts[t.id] = t
        self.dispatcher.drive()

    def _drop_ghosts(self, better_than: int | None = None) -> None:
        """Cancel the waiting ghosts no want justifies (all with None)."""
        now = self.dispatcher.now()
        for g in list(self._ghosts.values()):
            if g.state is TicketState.WAITING and (better_than is None or g.level < better_than):
                self.scheduler.cancel(g, now)
            if g.state not in (TicketState.WAITING, TicketState.RUNNING, TicketState.PREEMPTING):
                del self._ghosts[g.id]

    def _end_ghost(self, g: Ticket) -> None:
        self._ghosts.pop(g.id, None)
        if g.state in (TicketState.RUNNING, TicketState.PREEMPTING, TicketState.WAITING):
            self.scheduler.finished(g, self.dispatcher.now(), ok=True)

    # ---- the tasks -------------------------------------------------------------------

    async def run(self) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._listen)
            await self._keep()

    async def _listen(self) -> None:
        while True:
            if self.degraded:
                await anyio.sleep(0.2)
                continue
            try:
                msgs = await self.link.inbox()
            except FleetUnavailable as e:
                self._down(e)
                continue
            if self.degraded:
                continue  # what came while going down is void: the re-join recounts
            for m in msgs:
                if m == "grant":
                    self.held += 1
                    self.grants += 1
                    self._set_share()
                elif m.startswith("want:"):
                    self._ghost(int(m[5:]))
            self._kick.set()

    async def _keep(self) -> None:
        while True:
            interval = 1.0 if self.degraded else self.ttl / 3
            due = self._last_beat + interval - self.dispatcher.now()
            if due > 0 and not self._handoffs:
                with anyio.move_on_after(due):
                    await self._kick.wait()
            self._kick = anyio.Event()
            try:
                await self._step()
            except FleetUnavailable as e:
                self._down(e)

    async def _step(self) -> None:
        now = self.dispatcher.now()
        if self.degraded:
            if now - self._last_beat >= 1.0:
                await self._beat(rejoin=True)
            return
        while self._handoffs:
            g = self._handoffs.pop(0)
            if g.state not in (TicketState.RUNNING, TicketState.PREEMPTING):
                self._ghosts.pop(g.id, None)
                continue
            given = await self.link.script("handoff", self.slots(), self.ttl, self.held, g.level)
            if self.degraded:
                return
            if int(given):
                self.held = max(0, self.held - 1)
                self.handoffs += 1
                self.scheduler.set_share(self.held)
            self._end_ghost(g)
            self.dispatcher.drive()
        want = self._want()
        idle = self.held - self.scheduler.running if self.scheduler.waiting == 0 else 0
        if idle > 0 or (want is None and self._asked is not None):
            idle = max(0, idle)
            self.held -= idle  # before the call: the scheduler must not use them meanwhile
            self.scheduler.set_share(self.held)
            mine = int(
                await self.link.script(
                    "release", self.slots(), self.ttl, self.held + idle, idle, -1 if want is None else want
                )
            )
            self._asked = want
            if mine:
                self.held += mine
                self._set_share()
        elif want is not None and want != self._asked:  # else it waits for a grant
            got = int(await self.link.script("acquire", self.slots(), self.ttl, self.held, want))
            self._asked = None if got else want
            if got:
                self.held += 1
                self._set_share()
                self._kick.set()  # more may wait
        if self.dispatcher.now() - self._last_beat >= self.ttl / 3:
            await self._beat(rejoin=False)

    async def _beat(self, *, rejoin: bool) -> None:
        want = self._want()
        running = self._running()
        r = await self.link.script(
            "beat",
            self.slots(),
            self.ttl,
            running if rejoin else self.held,
            running,
            -1 if want is None else want,
            (2 if self.joined else 1) if rejoin else 0,
        )
        self._last_beat = self.dispatcher.now()
        mine, other, total, alive, flat = int(r[0]), int(r[1]), int(r[2]), int(r[3]), r[4]
        self.fleet_held, self.fleet_replicas = total, alive
        self.fleet_wants = {int(flat[i]): int(flat[i + 1]) for i in range(0, len(flat), 2)}
        if rejoin:
            self._up(running)
        self._asked = want
        if mine:
            self.held += mine
            self._set_share()
        if other < 0:
            self._drop_ghosts()
        else:
            self._drop_ghosts(better_than=other)
            if self.held:
                self._ghost(other)

    async def leave(self) -> None:
        """The replica stops: its leases go to the others now, not after ``ttl``."""
        if self.degraded:
            return
        try:
            with anyio.fail_after(self.link.timeout * 2 + 0.5):
                await self.link.script("leave", self.slots(), self.ttl, self.held)
        except (FleetUnavailable, TimeoutError):
            pass  # they come back when the lease runs out

    # ---- degraded mode ---------------------------------------------------------------

    def _down(self, e: FleetUnavailable) -> None:
        self._last_beat = self.dispatcher.now()  # the next try in a second
        if not self._told_down:
            log.warning(
                "shared state unreachable; admitting alone on %d slot(s) until it answers: %s",
                self._degraded_slots(),
                e,
            )
            self._told_down = True
        if self.degraded:
            if self.degraded_since is None:  # not joined yet
                self.degraded_since = self.dispatcher.now()
            return
        self.degraded = True
        self.degraded_since = self.dispatcher.now()
        self._drop_ghosts()
        for g in list(self._ghosts.values()):
            self._end_ghost(g)
        self._handoffs.clear()
        self._asked = None
        self.held = self._degraded_slots()
        self._set_share()  # what runs beyond the share is preempted

    def _up(self, running: int) -> None:
        was = self.degraded_since
        if was is not None:
            self.degraded_seconds += self.dispatcher.now() - was
        if self.joined and self.degraded:
            log.warning("shared state reachable again; admitting with the fleet")
        self.degraded = False
        self.degraded_since = None
        self.joined = True
        self._told_down = False
        self.held = running
        self._set_share()

    def degraded_time(self) -> float:
        """Seconds spent degraded so far (the current stretch included)."""
        extra = 0.0
        if self.degraded and self.degraded_since is not None:
            extra = self.dispatcher.now() - self.degraded_since
        return self.degraded_seconds + extra

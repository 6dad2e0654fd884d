"""Server replicas that share their engines' slots through Valkey or Redis.

Each replica runs its own :class:`~sdk.scheduler.Scheduler` over its own requests; what
the replicas share is the engines' slots, as **leases** counted in Valkey. A replica
may run as many requests as it holds leases (the scheduler's
:meth:`~sdk.scheduler.Scheduler.set_share`); every decision about the shared count is
one Lua script, run atomically by the server, with the server's clock (``TIME``):

- ``acquire``: a replica whose best waiting request waits only for a slot records its
  **want** (that request's level, and since when its oldest request there has waited:
  the replica sends the wait, the script subtracts it from the server's clock) and takes
  a lease if one is free and no other replica wants one more urgently: a better level,
  or an older want at the same level. Free leases always go to the best want first, so
  the order of admission across replicas follows the tiers (and aging, which raises a
  waiting request's level), and inside a level the longest wait.
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
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import anyio

from .._errors import SDKError
from ..scheduler import Call, Decisions, FleetMember
from ..session import parse_redis_url

if TYPE_CHECKING:
    from ..scheduler import Dispatcher

__all__ = ["FleetAdmission", "FleetLink", "FleetUnavailable", "fleet_name"]

log = logging.getLogger("sdk.server")

# The scripts' shared part. KEYS[1] is the fleet's key prefix; ARGV[1] the replica,
# ARGV[2] the engines' slots, ARGV[3] the lease time-to-live (ms), ARGV[4] the leases the
# caller holds by its own count, ARGV[5] the time in ms (empty: the server's clock, as
# replicas use it; a simulation passes its own), ARGV[6] the worst level among the
# caller's running streams that may be preempted (-1: none), ARGV[7] how long (ms) the
# oldest request of the caller's want has waited at its level. Every script first drops
# the replicas that missed their beats, then renews the caller's; a caller found dropped
# (its beat came late) is taken back with its own count, since its requests still run.
_COMMON = """
local P = KEYS[1]
local me = ARGV[1]
local slots = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
local now = tonumber(ARGV[5])
local waited = math.max(0, tonumber(ARGV[7]) or 0)
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function forget(r)
  redis.call('HDEL', P..'held', r)
  redis.call('HDEL', P..'want', r)
  redis.call('HDEL', P..'since', r)
  redis.call('HDEL', P..'told', r)
  redis.call('HDEL', P..'worst', r)
  redis.call('HDEL', P..'depth', r)
  redis.call('DEL', P..'inbox:'..r)
  redis.call('ZREM', P..'alive', r)
end
for _, r in ipairs(redis.call('ZRANGEBYSCORE', P..'alive', '-inf', now)) do forget(r) end
if redis.call('ZADD', P..'alive', now + ttl, me) == 1 then
  redis.call('HSET', P..'held', me, tonumber(ARGV[4]))
end
redis.call('HSET', P..'worst', me, tonumber(ARGV[6]))
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
-- The caller's want: its level, and since when its oldest request there has waited at
-- that level (an aged request since it rose), on this server's clock.
local function want(r, level)
  redis.call('HSET', P..'want', r, level)
  redis.call('HSET', P..'since', r, now - waited)
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
-- The holder to tell of a want at ``level`` by ``r``: the one running the worst stream
-- it may preempt, if worse than the want (its scheduler pauses it for the ghost), else
-- the one holding the most leases (its ghost takes a fair turn at the level). One holder,
-- not all: each ghost that finds a victim preempts it.
local function target(level, r)
  local h = redis.call('HGETALL', P..'held')
  local pick, pick_worst, pick_held = nil, -1, 0
  for i = 1, #h, 2 do
    local n = tonumber(h[i + 1])
    if h[i] ~= r and n > 0 then
      local w = tonumber(redis.call('HGET', P..'worst', h[i]) or '-1')
      if w <= level then w = -1 end
      if pick == nil or w > pick_worst or (w == pick_worst and n > pick_held) then
        pick, pick_worst, pick_held = h[i], w, n
      end
    end
  end
  return pick
end
-- Tell the chosen holder about a want, once per level.
local function tell(r, level)
  local told = redis.call('HGET', P..'told', r)
  if told ~= false and tonumber(told) <= level then return end
  local h = target(level, r)
  if h == nil then return end
  redis.call('HSET', P..'told', r, level)
  redis.call('RPUSH', P..'inbox:'..h, 'want:'..level)
  redis.call('PEXPIRE', P..'inbox:'..h, ttl)
end
"""

# ARGV[8]: the level of the caller's best waiting request. Returns 1: a lease is the
# caller's; 0: its want is recorded and told.
_ACQUIRE = (
    _COMMON
    + """
local level = tonumber(ARGV[8])
want(me, level)
if distribute() > 0 then return 1 end
tell(me, level)
return 0
"""
)

# ARGV[8]: leases given back; ARGV[9]: the caller's want now (-1: none). Returns the
# leases granted back to the caller (its own want may be the best).
_RELEASE = (
    _COMMON
    + """
local n = tonumber(ARGV[8])
local level = tonumber(ARGV[9])
if n > 0 then redis.call('HSET', P..'held', me, math.max(0, held(me) - n)) end
if level < 0 then unwant(me) else want(me, level) end
local mine = distribute()
if level >= 0 and mine == 0 then tell(me, level) end
return mine
"""
)

# ARGV[8]: the level of the caller's admitted ghost. Returns 1 when another replica
# wanted a lease at that level or better and the caller's is given back for it (0 also
# when the caller's own want is the best: it keeps the lease).
_HANDOFF = (
    _COMMON
    + """
local level = tonumber(ARGV[8])
local who, lvl = best()
if who == nil or who == me or lvl > level then return 0 end
redis.call('HSET', P..'held', me, math.max(0, held(me) - 1))
distribute()
return 1
"""
)

# ARGV[8]: the caller's count of running requests, written over the stored one when
# ARGV[10] is 1 (a join) or 2 (a re-join after running alone, which settles a fleet whose
# server lost its data); the inbox's old messages are dropped with it. ARGV[9]: its
# want (-1: none); ARGV[11]: its requests waiting per level, comma-separated. Returns
# {leases granted to the caller, the best level another replica wants if the caller is
# the holder to serve it (-1: none), leases held in the fleet, replicas alive, wants per
# level (a flat list of level, count), requests waiting per level in the fleet}.
_BEAT = (
    _COMMON
    + """
local running = tonumber(ARGV[8])
local level = tonumber(ARGV[9])
if ARGV[10] ~= '0' then
  redis.call('HSET', P..'held', me, running)
  redis.call('DEL', P..'inbox:'..me)
  redis.call('HDEL', P..'told', me)
  if redis.call('SET', P..'epoch', now, 'NX') and ARGV[10] == '2' then
    -- A re-join finds no epoch: the server lost its data. The replicas that ran alone
    -- meanwhile re-join within a lease's time; until then no lease is handed out.
    redis.call('SET', P..'settling', 1, 'PX', ttl)
  end
end
if level < 0 then unwant(me) else want(me, level) end
redis.call('HSET', P..'depth', me, ARGV[11] or '')
local mine = distribute()
local other, by = -1, nil
local per = {}
local w = redis.call('HGETALL', P..'want')
for i = 1, #w, 2 do
  local l = tonumber(w[i + 1])
  per[l] = (per[l] or 0) + 1
  if w[i] ~= me and (other < 0 or l < other) then other, by = l, w[i] end
end
if by ~= nil and target(other, by) ~= me then other = -1 end  -- another holder's to serve
local flat = {}
for l, c in pairs(per) do table.insert(flat, l); table.insert(flat, c) end
local depth = {}
for _, d in ipairs(redis.call('HVALS', P..'depth')) do
  local i = 1
  for c in string.gmatch(d, '[^,]+') do depth[i] = (depth[i] or 0) + tonumber(c); i = i + 1 end
end
return {mine, other, total(), redis.call('ZCARD', P..'alive'), flat, depth}
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
            raise ImportError("--state needs the redis client: pip install 'seam-llm[redis]'") from None
        u = parse_redis_url(url)  # the session stores' URL forms
        if u.scheme not in ("redis", "rediss", "unix"):
            raise ValueError(
                f"--state: a redis://, rediss://, valkey:// or valkeys:// URL, not {url.split(':')[0]!r}"
            )
        self._password = u.password
        self.url = u.shown
        target = u.target
        self.timeout = timeout
        self.listen_timeout = 1.0
        self._r = redis.Redis.from_url(target, socket_timeout=timeout, socket_connect_timeout=timeout)
        self._listen = redis.Redis.from_url(
            target, socket_timeout=self.listen_timeout + timeout, socket_connect_timeout=timeout
        )
        self._error = (redis.RedisError, OSError)
        self.prefix = f"seam:fleet:{{{fleet}}}:"
        self.replica = replica
        self.round_trips: dict[str, int] = {"admission": 0, "quota": 0, "stream": 0}  # calls by purpose
        self._scripts = {
            name: self.register(src)
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

    async def _call(self, fn: Callable[[], Any], kind: str | None, *, wait: float = 0.0) -> Any:
        """``fn()`` in a worker thread, counted as a round trip for ``kind``, bounded
        beyond the sockets' own timeouts (``wait``: how long it may block on purpose);
        the client's errors come out as :class:`FleetUnavailable`."""
        if kind is not None:
            self.round_trips[kind] += 1
        try:
            with anyio.fail_after(wait + self.timeout * 2 + 0.5):
                return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
        except TimeoutError as e:
            raise self._scrub(e) from None
        except self._error as e:
            raise self._scrub(e) from None

    def register(self, source: str) -> Any:
        """A Lua script of the server's, loaded on first use (no round trip here)."""
        return self._r.register_script(source)

    async def script(self, call: Call, slots: int, ttl: float) -> Any:
        """Run a :class:`~sdk.scheduler.FleetMember`'s call for this replica, on the
        server's clock."""
        return await self._call(lambda: self.script_now(call, slots, ttl), "admission")

    def script_now(self, call: Call, slots: int, ttl: float, *, now: float | None = None) -> Any:
        """The same, blocking; ``now`` (seconds) instead of the server's clock, for a
        simulation."""
        ms = "" if now is None else str(int(now * 1000))
        argv: list[str | int] = [
            self.replica,
            slots,
            max(1, int(ttl * 1000)),
            call.held,
            ms,
            call.worst,
            max(0, int(call.waited * 1000)),
            *call.args,
        ]
        if call.depth:
            argv.append(",".join(map(str, call.depth)))
        return self._scripts[call.script](keys=[self.prefix], args=argv)

    async def run(self, fn: Callable[[Any], Any], kind: str) -> Any:
        """``fn(client)`` in a worker thread (another script of the server's, a read),
        counted as a round trip for ``kind`` (``quota``, ``stream``)."""
        return await self._call(lambda: fn(self._r), kind)

    async def listen(self, fn: Callable[[Any], Any]) -> Any:
        """``fn(client)`` for a blocking read of up to ``listen_timeout`` seconds."""
        return await self._call(lambda: fn(self._listen), "stream", wait=self.listen_timeout)

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

        got: list[str] = await self._call(pop, None, wait=timeout)
        if got:
            self.round_trips["admission"] += 1  # a wait that brought messages
        return got

    def close(self) -> None:
        for c in (self._r, self._listen):
            with contextlib.suppress(Exception):  # closing a connection that is gone
                c.close()


class FleetAdmission:
    """The replica's host of its :class:`~sdk.scheduler.FleetMember` (see the module
    doc): it runs the member's calls against Valkey one at a time, passes on the inbox's
    messages and every poll's decisions, and drives the dispatcher after each.

    ``slots()``: the engines' slot count now (learnt or configured). :meth:`run` runs
    for the replica's life, in a task."""

    def __init__(
        self,
        link: FleetLink,
        dispatcher: Dispatcher,
        slots: Callable[[], int],
        *,
        ttl: float = 3.0,
        degraded_share: float = 0.5,
    ) -> None:
        self.link = link
        self.dispatcher = dispatcher
        self.slots = slots
        self.ttl = ttl
        self.member = FleetMember(dispatcher.scheduler, slots(), ttl=ttl, degraded_share=degraded_share)
        self._kick = anyio.Event()
        self._told_down = False
        dispatcher.observers.append(self._observe)

    @property
    def degraded(self) -> bool:
        return self.member.degraded

    def degraded_time(self) -> float:
        """Seconds spent degraded so far (the current stretch included)."""
        return self.member.degraded_time(self.dispatcher.now())

    def _observe(self, d: Decisions) -> None:
        self.member.observe(d)
        self._kick.set()  # anything may change the want

    async def run(self) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._listen)
            await self._keep()

    async def _listen(self) -> None:
        member = self.member
        while True:
            if member.degraded:
                await anyio.sleep(0.2)
                continue
            try:
                msgs = await self.link.inbox()
            except FleetUnavailable as e:
                self._failed(e, None)
                continue
            now = self.dispatcher.now()
            for m in msgs:
                member.message(m, now)
            self.dispatcher.drive()
            self._kick.set()

    async def _keep(self) -> None:
        member = self.member
        while True:
            member.slots = self.slots()
            call = member.next_call(self.dispatcher.now())
            if call is None:
                with anyio.move_on_after(max(0.0, member.wake_at() - self.dispatcher.now())):
                    await self._kick.wait()
                self._kick = anyio.Event()
                continue
            try:
                result = await self.link.script(call, member.slots, self.ttl)
            except FleetUnavailable as e:
                self._failed(e, call)
                continue
            was = member.degraded
            member.answered(call, result, self.dispatcher.now())
            if was and not member.degraded and self._told_down:
                log.warning("shared state reachable again; admitting with the fleet")
                self._told_down = False
            self.dispatcher.drive()

    def _failed(self, e: FleetUnavailable, call: Call | None) -> None:
        member = self.member
        member.failed(self.dispatcher.now(), call)
        if not self._told_down:
            log.warning(
                "shared state unreachable; admitting alone on %d slot(s) until it answers: %s",
                member.degraded_slots(),
                e,
            )
            self._told_down = True
        self.dispatcher.drive()  # what runs beyond the degraded share is preempted

    async def leave(self) -> None:
        """The replica stops: its leases go to the others now, not after ``ttl``."""
        call = self.member.leave()
        if call is None:
            return
        try:
            with anyio.fail_after(self.link.timeout * 2 + 0.5):
                await self.link.script(call, self.member.slots, self.ttl)
        except (FleetUnavailable, TimeoutError):
            pass  # they come back when the lease runs out

// Evaluated once in every fresh script context, before the user's module. It receives the
// host's log sink and the attempt's frozen time, installs `console` and a frozen `Date`, and
// returns the check of the script's return value. Builtins are captured here so a script
// that replaces `Object.keys` (say) cannot make the check skip anything it should see.
(function (sink, now) {
    "use strict";
    const RealDate = Date;
    const construct = Reflect.construct;
    const keys = Object.keys;
    const isArray = Array.isArray;
    const stringify = JSON.stringify;

    // The attempt's clock, and no other: `Date.now()` and `new Date()` are the attempt's start.
    function FrozenDate(...args) {
        if (new.target === undefined) {
            return new RealDate(now).toString();
        }
        return construct(RealDate, args.length === 0 ? [now] : args, new.target);
    }
    FrozenDate.prototype = RealDate.prototype;
    FrozenDate.now = () => now;
    FrozenDate.parse = RealDate.parse;
    FrozenDate.UTC = RealDate.UTC;
    Object.defineProperty(RealDate.prototype, "constructor", { value: FrozenDate, writable: true, configurable: true });
    globalThis.Date = FrozenDate;

    const text = (value) => {
        if (typeof value === "string") {
            return value;
        }
        if (value instanceof Error) {
            return String(value);
        }
        try {
            const json = stringify(value);
            return json === undefined ? String(value) : json;
        } catch (_) {
            return String(value);
        }
    };
    // The sink answers whether it takes more lines; once it does not, lines are only counted
    // (with `null`), never formatted.
    let open = true;
    const logger = (level) => (...args) => {
        open = open ? sink(level, args.map(text).join(" ")) : sink(level, null);
    };
    globalThis.console = Object.freeze({
        log: logger("log"),
        info: logger("info"),
        debug: logger("debug"),
        warn: logger("warn"),
        error: logger("error"),
    });

    // Why `value` cannot be stored as JSON, or undefined. `path` names where, `ancestors` are
    // the objects above it (a value repeated elsewhere is fine; one inside itself is a cycle).
    const problem = (value, path, ancestors) => {
        switch (typeof value) {
            case "function":
                return `a function at ${path}`;
            case "symbol":
                return `a symbol at ${path}`;
            case "bigint":
                return `a BigInt at ${path} (convert it with String() or Number())`;
            case "object":
                break;
            default:
                return undefined;
        }
        if (value === null || typeof value.toJSON === "function") {
            return undefined;
        }
        if (ancestors.includes(value)) {
            return `a cycle at ${path} (an object that contains itself)`;
        }
        ancestors.push(value);
        const array = isArray(value);
        for (const key of keys(value)) {
            const found = problem(value[key], array ? `${path}[${key}]` : `${path}.${key}`, ancestors);
            if (found !== undefined) {
                return found;
            }
        }
        ancestors.pop();
        return undefined;
    };
    return (value) => problem(value, "output", []);
})

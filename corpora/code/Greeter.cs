using System;
using System.Collections.Generic;

namespace Demo.Greeting
{
    /// <summary>Greets people by name.</summary>
    [Serializable]
    public sealed class Greeter
    {
        private readonly Dictionary<string, int> _seen = new();

        public string Prefix { get; set; } = "Hello";

        /// <summary>Returns a greeting and counts visits.</summary>
        public string Greet(string name)
        {
            _seen.TryGetValue(name, out var n);
            _seen[name] = n + 1;
            return n == 0 ? $"{Prefix}, {name}!" : $"{Prefix} again, {name} (visit {n + 1})";
        }

        public static void Main(string[] args)
        {
            var g = new Greeter { Prefix = "こんにちは" };
            foreach (var who in args)
            {
                Console.WriteLine(g.Greet(who));
            }
        }
    }
}

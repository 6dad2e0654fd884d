# frozen_string_literal: true

require 'json'

module Tasks
  # A task with a title and optional tags.
  class Task
    attr_reader :title, :tags

    def initialize(title, tags: [])
      @title = title
      @tags = tags
      @done = false
    end

    def done?
      @done
    end

    def complete!
      @done = true
      self
    end

    def to_h
      { title: @title, tags: @tags, done: @done }
    end
  end

  # Keeps tasks in memory and dumps them as JSON.
  class List
    include Enumerable

    def initialize
      @tasks = []
    end

    def add(title, **opts)
      Task.new(title, **opts).tap { |t| @tasks << t }
    end

    def each(&block)
      @tasks.each(&block)
    end

    def to_json(*args)
      map(&:to_h).to_json(*args)
    end
  end
end

list = Tasks::List.new
list.add('買い物', tags: %w[home])
list.add('write report', tags: %w[work urgent]).complete!
puts list.to_json
